"""The course site (tools/build_site.py), built once for the session, as a reader gets it.

- It builds from the committed notebooks with warnings as errors, and its own check passes: every
  internal link, anchor and image of the built HTML resolves, and no page loads a script,
  stylesheet or font from another host (the checker is shown to catch each of those, too).
- The landing page has a syllabus line per lesson notebook, the scoreboard, the navigation and where
  the repository is; the glossary page is README.md's table; each notebook page has its title, a note
  saying what it shows and how to run it, and a download link to the notebook; every image has its
  figure's alt text; nbval's markers are not shown; a lesson or a deep dive added to notebooks/ appears
  without editing the site.
- In headless Chromium (Debian's chromium and chromium-driver, through selenium) the landing page
  and a lesson page typeset their math, load every image and log no console error, fetch nothing
  from another host, the scoreboard fits 1,280 px, and search finds a lesson with excerpts of its
  text (not its header buttons). Screenshots: build/site-screenshots/.

These need the `site` extra (and, for the browser, chromium). Without them they skip, saying why,
except where GPU_LESSONS_SITE_REQUIRED=1 (set by .ci/run): there a missing tool fails them.
"""

from __future__ import annotations

import base64
import functools
import html
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD_SCRIPT = ROOT / "tools" / "build_site.py"
OUT = ROOT / "build" / "site"
SCREENSHOTS = ROOT / "build" / "site-screenshots"
REQUIRED = os.environ.get("GPU_LESSONS_SITE_REQUIRED") == "1"
SITE_PACKAGES = ("sphinx", "myst_nb", "sphinx_book_theme", "sphinx-mathjax-offline")


def _missing(what: str) -> None:
    """Skip on a developer's machine; fail where the site is required (CI)."""
    if REQUIRED:
        pytest.fail(f"{what} (GPU_LESSONS_SITE_REQUIRED=1: the site must be tested here)")
    pytest.skip(what)


def _load_builder():
    spec = importlib.util.spec_from_file_location("build_site", BUILD_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_site", module)
    spec.loader.exec_module(module)
    return sys.modules["build_site"]


builder = _load_builder()


@pytest.fixture(scope="session")
def site() -> Path:
    """build/site, built by the documented command (which checks links and assets itself)."""
    absent = [name for name in SITE_PACKAGES if importlib.util.find_spec(name) is None]
    if absent:
        _missing(f"the site extra is not installed (no {', '.join(absent)}): pip install -e '.[site]'")
    done = subprocess.run([sys.executable, str(BUILD_SCRIPT)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, f"tools/build_site.py failed:\n{done.stdout}\n{done.stderr}"
    assert "links and assets checked" in done.stdout
    return OUT


def lesson_notebooks() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("[0-9]*_*.ipynb"))


def text_of(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _plain(markup: str) -> str:
    """Text as compared: tags and markdown code marks dropped, entities and smart quotes undone."""
    text = html.unescape(re.sub(r"<[^>]+>|`", "", markup))
    return text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')


# ---------------------------------------------------------------------------------------------
# The build and its pages


def test_build_passes_its_own_check(site):
    """The build exits non-zero on a broken link or an external asset (the fixture checks)."""
    assert (site / "index.html").is_file() and (site / "en" / "index.html").is_file()


def test_landing_page_has_syllabus_scoreboard_and_run_instructions(site):
    landing = text_of(site / "en" / "index.html")
    for notebook in lesson_notebooks():
        assert f'href="notebooks/{notebook.stem}.html"' in landing, f"{notebook.name} is not in the syllabus"
    assert "Scoreboard" in landing and "cublas sgemm" in landing and "Measured on NVIDIA H200" in landing
    assert "Without a GPU" in landing and "On an NVIDIA GPU" in landing
    assert 'href="glossary.html"' in landing and 'href="search.html"' in landing


def test_glossary_page_is_the_readme_table(site):
    page = text_of(site / "en" / "glossary.html")
    shown = [_plain(cell) for cell in re.findall(r"<td><p>(.*?)</p>", page, re.S)]
    table = builder.glossary_table().splitlines()[2:]  # below the header and its rule
    rows = [[cell.strip() for cell in row.strip("|").split("|")] for row in table]
    assert len(rows) > 10
    for row in rows:
        assert shown[:len(row)] == [_plain(cell) for cell in row]
        shown = shown[len(row):]
    assert shown == [], "the page has rows the README does not"


def test_notebook_pages_have_their_title_a_download_and_a_colab_link(site):
    for notebook in lesson_notebooks():
        page = text_of(site / "en" / "notebooks" / f"{notebook.stem}.html")
        title = builder.read_page(notebook, "").title
        heading = re.search(r"<h1>(.*?)<a class=\"headerlink\"", page).group(1)
        assert _plain(heading) == _plain(title)
        link = re.search(r'<a class="btn btn-sm notebook-download" href="([^"]+)"', page)
        assert link, f"{notebook.name}: no download link"
        target = (site / "en" / "notebooks" / link.group(1)).resolve()
        edition = builder.editions(["en"])[0]
        assert target.read_text(encoding="utf-8") == builder.staged_notebook(notebook, edition), (
            f"{notebook.name}: the download is not the notebook as staged")
        downloaded = json.loads(target.read_text(encoding="utf-8"))
        committed = json.loads(notebook.read_text(encoding="utf-8"))
        assert len(downloaded["cells"]) == len(committed["cells"]) + 1  # the page note, nothing else added
        colab = re.search(r'<a class="btn btn-sm notebook-colab" href="([^"]+)"', page)
        assert colab and html.unescape(colab.group(1)) == colab_url(f"notebooks/{notebook.name}")
    deep_dive = text_of(site / "en" / "notebooks" / "deep_dives" / f"{notebook.stem}.html")
    assert f'href="{colab_url(f"notebooks/deep_dives/{notebook.name}")}"' in deep_dive


def colab_url(path: str) -> str:
    sys.path.insert(0, str(ROOT))
    from gpu_lessons import colab

    return colab.notebook_url(path)


def test_every_image_has_its_figures_alt_text(site):
    """Every <img> of every page carries a description (the figure's alt text from plots.style), not
    the file name myst-nb would put there; the notebooks' figures all have one."""
    images = 0
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.relative_to(site).parts:
            continue
        for tag in re.findall(r"<img\b[^>]*>", text_of(page)):
            images += 1
            alt = re.search(r'\balt="([^"]*)"', tag)
            assert alt and len(alt.group(1).split()) >= 4, f"{page.relative_to(site)}: {tag[:160]}"
            assert not re.search(r"\.(png|svg|jpe?g)\b|_images/", alt.group(1)), (
                f"{page.relative_to(site)}: {tag[:160]}")
    assert images > 40


def test_pages_say_what_they_show_and_how_to_run_them(site):
    """Each notebook page says it shows the simulator's execution with the H200's recorded measurements
    and how to run the notebook from the repository; nbval's markers are not shown; the landing page
    says where the repository is and how to clone it."""
    from gpu_lessons.course import REPOSITORY

    pages = sorted((site / "en" / "notebooks").rglob("*.html"))
    assert len(pages) >= 2 * len(lesson_notebooks())
    for page in pages:
        text = text_of(page)
        assert "What this page shows" in text and "simulator" in text and REPOSITORY in text, page.name
        assert "NBVAL" not in text, f"{page.name} shows nbval's markers"
    landing = text_of(site / "en" / "index.html")
    assert f"git clone {REPOSITORY}" in _plain(landing) and f'href="{REPOSITORY}"' in landing


def test_deep_dive_section_is_absent_without_deep_dives(site):
    if list((ROOT / "notebooks" / "deep_dives").glob("*.ipynb")):
        pytest.skip("notebooks/deep_dives/ has notebooks: test_new_notebooks_appear covers the section")
    assert "Deep dives" not in text_of(site / "en" / "index.html")


# ---------------------------------------------------------------------------------------------
# New notebooks appear without editing the site (a small edition built in a temporary folder)


def _notebook(title: str, markdown: str) -> dict:
    png = base64.b64encode(bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
    )).decode()
    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                     "language_info": {"name": "python"}},
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": f"# {title}\n\n{markdown}"},
            {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": 1, "source": "plot()",
             "outputs": [{"output_type": "display_data", "metadata": {},
                          "data": {"image/png": png, "text/plain": "<Figure>"}}]},
        ],
    }


def test_new_notebooks_appear_without_editing_the_site(tmp_path):
    if any(importlib.util.find_spec(name) is None for name in SITE_PACKAGES):
        _missing("the site extra is not installed: pip install -e '.[site]'")
    notebooks = tmp_path / "notebooks"
    (notebooks / "deep_dives").mkdir(parents=True)
    (notebooks / "09_fp8_scaling.ipynb").write_text(json.dumps(_notebook(
        "Lesson 9 — FP8 scaling", "A new lesson: $C = AB$ in eight-bit floats.")))
    (notebooks / "deep_dives" / "09_fp8_scaling.ipynb").write_text(json.dumps(_notebook(
        "Deep dive 9 — FP8 scaling", "Evidence for [lesson 9](../09_fp8_scaling.ipynb).")))
    (notebooks / "notes.ipynb").write_text("not a lesson: its name has no number")
    english = builder.editions(["en"])[0]
    edition = builder.Edition(**{**english.__dict__, "notebooks": notebooks})

    pages = builder.stage(edition, tmp_path / "src")
    builder.sphinx_build(edition, tmp_path / "src", tmp_path / "site", tmp_path / "cache")

    assert [p.title for p in pages["lessons"]] == ["Lesson 9 — FP8 scaling"]
    assert [p.docname for p in pages["deep_dives"]] == ["notebooks/deep_dives/09_fp8_scaling"]
    landing = text_of(tmp_path / "site" / "index.html")
    assert "Deep dives" in landing and 'href="notebooks/deep_dives/09_fp8_scaling.html"' in landing
    assert "A new lesson:" in landing  # no summary in gpu_lessons.lessons: the notebook's first sentence
    assert builder.check_site(tmp_path / "site") == []


# ---------------------------------------------------------------------------------------------
# The checker catches what it is there to catch


def test_check_site_reports_broken_links_and_external_assets(tmp_path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "a.html").write_text(
        '<p id="here"><a href="b.html#nowhere">x</a><a href="missing.html">y</a>'
        '<a href="#here">ok</a><a href="https://example.org/">an external link is fine</a>'
        '<img src="_static/none.png"><script src="https://cdn.example.org/m.js"></script>'
        '<link rel="stylesheet" href="//fonts.example.org/css"></p>'
    )
    (tmp_path / "b.html").write_text('<link rel="stylesheet" href="_static/s.css"><p id="there"></p>')
    (tmp_path / "_static" / "s.css").write_text(
        '@font-face { src: url("https://fonts.example.org/f.woff2") } .x { background: url(gone.png) }'
    )
    problems = "\n".join(builder.check_site(tmp_path))
    for expected in ("b.html#nowhere: no such anchor", "missing.html: no such file",
                     "_static/none.png: no such file",
                     "loads https://cdn.example.org/m.js from another host",
                     "loads //fonts.example.org/css from another host",
                     "url(https://fonts.example.org/f.woff2) loads from another host",
                     "url(gone.png): no such file"):
        assert expected in problems
    assert "example.org/ " not in problems and "#here" not in problems
    assert len(problems.splitlines()) == 7


def test_glossary_comes_from_the_readme_or_the_build_says_why(tmp_path):
    readme = tmp_path / "README.md"
    table = "| a | b |\n| - | - |\n| roofline | Roofline 模型 |\n"
    readme.write_text(f"# x\n\n## Glossary (术语表)\n\n{table}\n## Next\n")
    assert builder.glossary_table(readme) == table
    readme.write_text("# x\n\n## Layout\n")
    with pytest.raises(builder.SiteError, match="no '## Glossary' section"):
        builder.glossary_table(readme)


# ---------------------------------------------------------------------------------------------
# In a real browser


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def served(site):
    handler = functools.partial(_QuietHandler, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    chromium = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        _missing("no chromium/chromedriver (Debian: apt-get install chromium chromium-driver)")
    if importlib.util.find_spec("selenium") is None:
        _missing("selenium is not installed: pip install -e '.[site]'")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1366,900",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
                 # any host but this machine is unreachable: a page that needs one shows errors
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(60)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


RENDERED = """
const done = arguments[arguments.length - 1];
(async () => {
  if (document.readyState !== "complete") {
    await new Promise(resolve => window.addEventListener("load", resolve, {once: true}));
  }
  const mathSources = document.querySelectorAll("span.math, div.math").length;
  if (mathSources) {
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
      await new Promise(resolve => setTimeout(resolve, 50));
    }
    await MathJax.startup.promise;
  }
  const images = [...document.images];
  for (const image of images) { image.loading = "eager"; }
  await Promise.all(images.map(image => image.decode().catch(() => null)));
  done({
    mathSources,
    typeset: document.querySelectorAll("span.math mjx-container, div.math mjx-container").length,
    untypeset: [...document.querySelectorAll("span.math, div.math")]
      .filter(m => !m.querySelector("mjx-container")).map(m => m.textContent.slice(0, 80)),
    mathErrors: [...document.querySelectorAll("mjx-merror")].map(e => e.textContent.slice(0, 80)),
    images: images.length,
    broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute("src")),
    resources: performance.getEntriesByType("resource").map(r => r.name).concat([location.href]),
    title: document.title,
  });
})().catch(error => done({error: String(error)}));
"""


def _render(browser, url: str, screenshot: str | None = None) -> dict:
    browser.get(url)
    result = browser.execute_async_script(RENDERED)
    assert "error" not in result, result
    log = browser.get_log("browser")
    result["console"] = [entry for entry in log if entry["level"] in ("SEVERE", "WARNING")]
    if screenshot:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOTS / screenshot))
    return result


def _assert_rendered(result: dict, origin: str) -> None:
    assert not result["untypeset"], f"math left untypeset: {result['untypeset'][:5]}"
    assert not result["mathErrors"], f"TeX errors: {result['mathErrors'][:5]}"
    assert not result["broken"], f"images that did not load: {result['broken']}"
    assert not result["console"], f"console: {result['console']}"
    foreign = [url for url in result["resources"] if not url.startswith(origin + "/")]
    assert not foreign, f"fetched from another host: {foreign}"


def lesson_with_math_and_figures(site: Path) -> Path:
    for notebook in lesson_notebooks():
        page = site / "en" / "notebooks" / f"{notebook.stem}.html"
        html = text_of(page)
        if 'class="math' in html and "<img" in html:
            return page
    pytest.fail("no lesson page has both math and a figure")


def test_landing_page_in_chromium(browser, served):
    result = _render(browser, f"{served}/index.html", "landing.png")  # through the root's redirect
    assert browser.current_url == f"{served}/en/index.html"
    _assert_rendered(result, served)
    for width in (1280, 1366):  # the scoreboard's last column (Size) in view, not scrolled away
        browser.set_window_size(width, 900)
        overflow = browser.execute_script(
            "const t = document.querySelector('.scoreboard table'); return t.scrollWidth - t.clientWidth;")
        assert overflow <= 1, f"at {width} px the scoreboard scrolls by {overflow} px"
    browser.set_window_size(1366, 900)


def test_lesson_page_in_chromium(browser, served, site):
    page = lesson_with_math_and_figures(site)
    result = _render(browser, f"{served}/{page.relative_to(site).as_posix()}", "lesson.png")
    assert result["mathSources"] > 0 and result["typeset"] >= result["mathSources"]
    assert result["images"] > 0
    _assert_rendered(result, served)
    # a figure and some math as the reader sees them, for a look at the screenshots
    for selector, name in ((".cell_output img", "lesson-figure.png"), ("mjx-container", "lesson-math.png")):
        browser.execute_script(f"document.querySelector('{selector}').scrollIntoView({{block: 'center'}})")
        browser.save_screenshot(str(SCREENSHOTS / name))


def test_search_finds_a_lesson(browser, served):
    browser.get(f"{served}/en/search.html?q=coalescing")
    found = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const started = Date.now();
        (function poll() {
          const links = [...document.querySelectorAll("#search-results li a")]
            .map(a => a.getAttribute("href"));
          if (links.length || Date.now() - started > 20000) { done(links); } else { setTimeout(poll, 100); }
        })();
    """)
    assert any("03_coalescing" in link for link in found), found
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    excerpts = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const started = Date.now();
        (function poll() {
          const texts = [...document.querySelectorAll("#search-results li p.context")]
            .map(p => p.textContent);
          if (texts.length || Date.now() - started > 20000) { done(texts); } else { setTimeout(poll, 100); }
        })();
    """)
    assert excerpts, "search shows no excerpts"
    assert not [t for t in excerpts if "Download the notebook" in t or ".ipynb" in t], excerpts[:3]
