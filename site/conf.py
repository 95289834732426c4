"""Sphinx configuration shared by every edition of the course site.

tools/build_site.py stages an edition (site/<lang>/ pages, notebook copies, generated tables) and
runs Sphinx with this folder as its configuration, passing the edition's language and title with
-D and its labels with -A. Build with that script, not with sphinx-build directly.
"""

import filecmp
import importlib.util
import shutil
from pathlib import Path

project = "gpu-lessons"
author = "the gpu-lessons authors"
copyright = "the gpu-lessons authors (MIT License)"
language = "en"  # the build sets the edition's
html_title = "GPU performance, measured"  # the build sets the edition's

extensions = ["myst_nb", "sphinx.ext.mathjax"]
exclude_patterns = ["_generated", "**.ipynb_checkpoints"]
templates_path = ["_templates"]

# The notebooks are committed executed, with the H200's measurements in their outputs: those
# outputs are the content. Never execute them here.
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_dmath_double_inline = True
myst_heading_anchors = 3  # [see ...](other.ipynb#a-section) links between notebooks resolve

html_theme = "sphinx_book_theme"
html_static_path = ["_static"]
html_css_files = ["site.css"]
html_js_files = ["search-excerpt.js"]  # search excerpts start at the page's text, not its header buttons
html_favicon = "_static/favicon.svg"
html_sourcelink_suffix = ""  # _sources/<page>.ipynb is the notebook itself: the download link
html_last_updated_fmt = None
# The figures are drawn for a white page; a reader can still switch (the theme's default, "", logs
# a console error on a first visit).
html_context = {"default_mode": "light"}
html_theme_options = {
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": True,
    "use_fullscreen_button": False,
    "footer_content_items": ["copyright.html"],
    # the landing page's scoreboard needs the width: no "contents" column there
    "secondary_sidebar_items": {"**": ["page-toc"], "index": []},
    "navbar_persistent": [],  # the sidebar has the search field: no second one in a top bar
    # a visible "download the notebook" link at the top of each notebook page
    "article_header_end": ["notebook-download.html", "article-header-buttons.html"],
}

# MathJax from the site itself, not a CDN: a reader without internet still sees the math. The
# files come from the sphinx-mathjax-offline package (MathJax 3.2.2); only what tex-chtml-full
# needs is copied (the package's whole tree is 24 MB).
mathjax_path = "mathjax/tex-chtml-full.js"
MATHJAX_FILES = ["tex-chtml-full.js", "output/chtml/fonts/woff-v2", "a11y", "ui",
                 "sre/mathmaps/base.json", "sre/mathmaps/en.json"]


def _mathjax_source() -> Path:
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("MathJax is missing: pip install -e '.[site]' (sphinx-mathjax-offline)")
    return Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax"


def _copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    source, target = _mathjax_source(), Path(app.outdir) / "_static" / "mathjax"
    for name in MATHJAX_FILES:
        paths = [source / name] if (source / name).is_file() else sorted((source / name).rglob("*"))
        for path in paths:
            if not path.is_file():
                continue
            destination = target / path.relative_to(source)
            if not destination.exists() or not filecmp.cmp(path, destination, shallow=False):
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, destination)


def setup(app):
    _mathjax_source()  # fail early, before anything is written
    app.connect("build-finished", _copy_mathjax)
