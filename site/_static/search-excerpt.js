/* Search excerpts: Sphinx takes them from the page's [role=main] element, which in this theme also
   holds the article header (the "Download the notebook" link and the download menu's ".ipynb"). Drop
   those before the excerpt is made, so that it starts with the page's own text. */
document.addEventListener("DOMContentLoaded", () => {
  // searchtools.js declares `const Search` at the top level: a global binding, not a property of window
  const search = typeof Search === "undefined" ? null : Search;
  if (!search || typeof search.htmlToText !== "function" || search.htmlToText.patched) {
    return;
  }
  const original = search.htmlToText;
  const patched = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    page.querySelectorAll(".bd-header-article, .notebook-download, .header-article-items").forEach((element) => {
      element.remove();
    });
    return original(page.documentElement.outerHTML, anchor);
  };
  patched.patched = true;
  search.htmlToText = patched;
});
