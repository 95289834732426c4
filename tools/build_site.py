"""Build the course site from the committed, executed notebooks, then check it.

    python3 tools/build_site.py              # every edition under site/ -> build/site/<lang>/
    python3 tools/build_site.py --lang en    # one edition

Nothing is executed: each notebook page shows the outputs the notebook was committed with (the
H200 measurements). The pages are found at build time: every ``notebooks/NN_<topic>.ipynb`` is a
lesson and every ``notebooks/deep_dives/NN_<topic>.ipynb`` a deep dive (the section is left out
when there is none); a page's title is the notebook's first heading.

An edition is a folder ``site/<lang>/`` with ``edition.toml`` (language, title, labels, where its
notebooks are) and its hand-written pages (``index.md``, ``glossary.md``). For each edition this
script stages a Sphinx source folder, ``build/site-src/<lang>/``: those pages, copies of the
notebooks and ``_generated/`` markdown: the syllabus (one line per lesson), the scoreboard (from
``data/`` through ``gpu_lessons.scoreboard``), the glossary table (parsed from README.md, its one
source) and the navigation. Sphinx (``site/conf.py``, shared by the editions) writes the HTML to
``build/site/<lang>/`` with warnings as errors; ``build/site/index.html`` leads to the first
edition. Last, every internal link, image and asset reference of the built HTML is checked
(``check_site``), and no page may load a script, stylesheet or font from another host.
"""

from __future__ import annotations

import argparse
import filecmp
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"  # conf.py, _templates/, _static/ and one folder per edition
OUT = ROOT / "build" / "site"
STAGING = ROOT / "build" / "site-src"
CACHE = ROOT / "build" / "site-cache"  # Sphinx's own output and doctrees: incremental rebuilds

NOTEBOOK_NAME = re.compile(r"^(\d+)_[A-Za-z0-9_]+\.ipynb$")


class SiteError(RuntimeError):
    """A one-line reason the site cannot be built (or is broken); exit status 1."""


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


# ---------------------------------------------------------------------------------------------
# Editions and notebooks


@dataclass(frozen=True)
class Edition:
    lang: str  # the folder under site/
    folder: Path
    language: str  # Sphinx's language code ("en", "zh_CN")
    title: str
    notebooks: Path  # this edition's lesson notebooks; deep dives in its deep_dives/
    package_summaries: bool  # syllabus lines from gpu_lessons.lessons (English) or the notebooks
    labels: dict[str, str]


LABELS = ("lessons", "deep_dives", "deep_dive", "reference", "download", "colab", "page_note")


def editions(only: list[str] | None = None) -> list[Edition]:
    found = sorted(p.parent for p in SITE.glob("*/edition.toml"))
    result = []
    for folder in found:
        config = tomllib.loads((folder / "edition.toml").read_text(encoding="utf-8"))
        labels = config.get("labels", {})
        missing = [key for key in LABELS if key not in labels]
        if missing:
            raise SiteError(f"{folder / 'edition.toml'}: [labels] lacks {', '.join(missing)}")
        result.append(Edition(
            lang=folder.name, folder=folder, language=config["language"], title=config["title"],
            notebooks=ROOT / config.get("notebooks", "notebooks"),
            package_summaries=bool(config.get("package_summaries", False)), labels=labels,
        ))
    if only:
        unknown = sorted(set(only) - {e.lang for e in result})
        if unknown:
            raise SiteError(f"no edition {', '.join(unknown)} under {SITE.relative_to(ROOT)}/ "
                            f"(editions: {', '.join(e.lang for e in result) or 'none'})")
        result = [e for e in result if e.lang in only]
    if not result:
        raise SiteError(f"no edition under {SITE.relative_to(ROOT)}/ (a folder with edition.toml)")
    return result


@dataclass(frozen=True)
class Page:
    path: Path  # the committed notebook
    docname: str  # Sphinx's name for its page: notebooks/01_roofline, notebooks/deep_dives/01_...
    number: int
    title: str
    intro: str  # the first sentence after the title


def _markdown_cells(path: Path) -> list[str]:
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError) as error:
        raise SiteError(f"{_shown(path)}: not a readable notebook ({error})") from None
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells if c.get("cell_type") == "markdown"]


def _first_sentence(text: str) -> str:
    paragraph = next((p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()), "")
    paragraph = " ".join(paragraph.split())
    match = re.match(r"(.+?[.!?])(\s|$)", paragraph)
    return match.group(1) if match else paragraph


def read_page(path: Path, docname: str) -> Page:
    for source in _markdown_cells(path):
        match = re.search(r"^#{1,6}\s+(.+?)\s*#*\s*$", source, re.MULTILINE)
        if match:
            intro = _first_sentence(source[match.end():])
            return Page(path, docname, int(NOTEBOOK_NAME.match(path.name).group(1)),
                        match.group(1).strip(), intro)
    raise SiteError(f"{_shown(path)}: no heading in its markdown cells (the page's title)")


def notebook_pages(folder: Path, prefix: str) -> list[Page]:
    paths = sorted((p for p in folder.glob("*.ipynb") if NOTEBOOK_NAME.match(p.name)),
                   key=lambda p: (int(NOTEBOOK_NAME.match(p.name).group(1)), p.name))
    return [read_page(p, f"{prefix}{p.stem}") for p in paths]


# ---------------------------------------------------------------------------------------------
# Generated markdown


def _import_package():
    """This tree's gpu_lessons (not another checkout's), in the mode it picks by itself."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import gpu_lessons.lessons
    import gpu_lessons.scoreboard

    return gpu_lessons.lessons, gpu_lessons.scoreboard


def _inline(text: str) -> str:
    """Markdown that fits in one line of the landing page: links (relative to their notebook)
    become their text."""
    return " ".join(re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text).split())


def syllabus(edition: Edition, lessons: list[Page], deep_dives: list[Page]) -> str:
    summaries = {}
    if edition.package_summaries:
        package, _ = _import_package()
        summaries = {m.NOTEBOOK: m.SUMMARY for m in package.LESSONS.values()}
    dives = {d.number: d for d in deep_dives}
    lines = []
    for page in lessons:
        summary = summaries.get(page.path.name) or page.intro
        line = f"1. {{doc}}`{page.docname}`" + (f": {_inline(summary)}" if summary else "")
        if page.number in dives:
            line += f" ({{doc}}`{edition.labels['deep_dive']} <{dives[page.number].docname}>`)"
        lines.append(line)
    # a deep dive without a lesson of its number still gets a line
    lines += [f"- {{doc}}`{d.docname}`" for d in deep_dives if d.number not in {p.number for p in lessons}]
    return "\n".join(lines) + "\n"


def scoreboard_markdown() -> str:
    package, board_module = _import_package()
    board = board_module.scoreboard(package.comparisons())
    return board_module.format_scoreboard(board) + "\n"


GLOSSARY_HEADING = re.compile(r"^##\s+Glossary\b.*$", re.MULTILINE)


def glossary_table(readme: Path = ROOT / "README.md") -> str:
    """The glossary table of README.md (its one source), as it stands there."""
    text = readme.read_text(encoding="utf-8")
    heading = GLOSSARY_HEADING.search(text)
    if heading is None:
        raise SiteError("README.md has no '## Glossary' section: the site's glossary page is made "
                        "from its table")
    table = []
    for line in text[heading.end():].lstrip("\n").splitlines():
        if not line.startswith("|"):
            break
        table.append(line)
    if len(table) < 3 or not re.match(r"^\|[\s:|-]+\|$", table[1]):
        raise SiteError("README.md: the '## Glossary' heading is not followed by a markdown table")
    return "\n".join(table) + "\n"


def toctrees(edition: Edition, lessons: list[Page], deep_dives: list[Page]) -> str:
    """The hidden toctrees behind the sidebar and prev/next: lessons, deep dives, reference."""
    sections = [(edition.labels["lessons"], [p.docname for p in lessons]),
                (edition.labels["deep_dives"], [p.docname for p in deep_dives]),
                (edition.labels["reference"], ["glossary"])]
    blocks = []
    for caption, docnames in sections:
        if docnames:  # no deep dives yet: no empty section
            entries = "\n".join(docnames)
            blocks.append(f"```{{toctree}}\n:hidden:\n:maxdepth: 2\n:caption: {caption}\n\n{entries}\n```\n")
    return "\n".join(blocks)


# ---------------------------------------------------------------------------------------------
# Staging and building


CHECK_MARKER = re.compile(r"^# NBVAL_\w+[^\n]*\n?", re.MULTILINE)  # nbval's markers: for the tests


def page_note(edition: Edition) -> str:
    """The note under each notebook page's title (the edition's ``page_note``, with the repository's
    address): what the page shows, and how to run the notebook. It travels with the downloaded
    notebook, so it names the repository, not a page of the site."""
    _import_package()
    from gpu_lessons.course import REPOSITORY

    return edition.labels["page_note"].format(repository=REPOSITORY)


def install_markdown() -> str:
    """The landing page's first step, from the one constant that names the repository."""
    _import_package()
    from gpu_lessons.course import REPOSITORY

    return (f"The course lives at <{REPOSITORY}>. Clone it first:\n\n"
            f"```bash\ngit clone {REPOSITORY}\ncd gpu-lessons\n```\n")


def staged_notebook(path: Path, edition: Edition) -> str:
    """The notebook as the site shows it: each figure's alt text (kept in the output's metadata by
    ``plots.style``) where myst-nb reads it (the cell's ``mystnb.image.alt``); nbval's
    ``# NBVAL_CHECK_OUTPUT`` lines removed; under the title, a note saying what the page shows (the
    notebook executed on the simulator, with the H200's recorded measurements) and how to run it."""
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SiteError(f"{_shown(path)}: not a readable notebook ({error})") from None
    cells = notebook["cells"]
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        cell["source"] = CHECK_MARKER.sub("", source)
        alts = [output.get("metadata", {}).get("image/png", {}).get("alt")
                for output in cell.get("outputs", []) if "image/png" in output.get("data", {})]
        alts = [alt for alt in dict.fromkeys(alts) if alt]
        if alts:
            options = cell.setdefault("metadata", {}).setdefault("mystnb", {}).setdefault("image", {})
            options["alt"] = " ".join(alts)
    title = next((i for i, c in enumerate(cells) if c.get("cell_type") == "markdown"), None)
    if title is not None:
        note = {"cell_type": "markdown", "id": "page-note", "metadata": {}, "source": page_note(edition)}
        cells.insert(title + 1, note)
    return json.dumps(notebook, ensure_ascii=False, indent=1) + "\n"


def _write(path: Path, text: str) -> None:
    """Write only when changed, so that Sphinx rebuilds only what changed."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _mirror(sources: dict[str, Path], target: Path, keep=()) -> None:
    """target holds exactly these files (relative name -> source), mtimes kept, and those named in
    ``keep`` (written by the caller)."""
    wanted = {target / name for name in [*sources, *keep]}
    if target.exists():
        for path in sorted(target.rglob("*"), reverse=True):
            if path.is_file() and path not in wanted:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    for name, source in sources.items():
        destination = target / name
        if not destination.exists() or not filecmp.cmp(source, destination):  # copy2 keeps mtimes
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)


def stage(edition: Edition, staging: Path) -> dict[str, list[Page]]:
    lessons = notebook_pages(edition.notebooks, "notebooks/")
    deep_dives = notebook_pages(edition.notebooks / "deep_dives", "notebooks/deep_dives/")
    if not lessons:
        raise SiteError(f"no lesson notebooks ({_shown(edition.notebooks)}/NN_<topic>.ipynb)")
    sources = {p.relative_to(edition.folder).as_posix(): p
               for p in edition.folder.rglob("*") if p.is_file() and p.name != "edition.toml"}
    # the notebooks keep their layout (notebooks/deep_dives/), so links between them work; they are
    # staged as readers get them (staged_notebook): alt text, no test markers, what the page shows
    notebooks = {f"{page.docname}.ipynb": staged_notebook(page.path, edition)
                 for page in lessons + deep_dives}
    generated = {
        "_generated/syllabus.md": syllabus(edition, lessons, deep_dives),
        "_generated/scoreboard.md": scoreboard_markdown(),
        "_generated/glossary.md": glossary_table(),
        "_generated/toctree.md": toctrees(edition, lessons, deep_dives),
        "_generated/install.md": install_markdown(),
    }
    _mirror(sources, staging, keep={*generated, *notebooks})  # removes stale copies and old files
    for name, text in {**generated, **notebooks}.items():
        _write(staging / name, text)
    return {"lessons": lessons, "deep_dives": deep_dives}


def colab_notebooks(edition: Edition) -> str:
    """Where Colab opens this edition's notebooks from (the repository: gpu_lessons.colab), up to
    the page's path below notebooks/ (site/_templates/notebook-download.html adds it)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from gpu_lessons import colab

    folder = edition.notebooks
    inside = folder.relative_to(ROOT).as_posix() if folder.is_relative_to(ROOT) else "notebooks"
    return colab.notebook_url(inside + "/")  # (a folder outside the repository: a test's edition)


def sphinx_build(edition: Edition, staging: Path, out: Path, cache: Path) -> None:
    """Sphinx writes into cache/html (myst-nb puts its jupyter_execute/ beside it), then the
    HTML alone is mirrored to out."""
    command = [
        sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going",
        "-c", str(SITE), "-d", str(cache / "doctrees"),
        "-D", f"language={edition.language}", "-D", f"html_title={edition.title}",
        "-A", f"download_label={edition.labels['download']}",
        "-A", f"colab_label={edition.labels['colab']}", "-A", f"colab_notebooks={colab_notebooks(edition)}",
        str(staging), str(cache / "html"),
    ]
    # the package (scoreboard) and the conf import nothing from a different checkout
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    if subprocess.run(command, env=env).returncode != 0:
        raise SiteError(f"sphinx-build failed for edition '{edition.lang}' (warnings are errors; see above)")
    html = cache / "html"
    _mirror({p.relative_to(html).as_posix(): p for p in html.rglob("*") if p.is_file()}, out)


def write_root_index(out: Path, built: list[Edition]) -> None:
    first = built[0]
    links = "\n".join(f'<li><a href="{e.lang}/index.html" hreflang="{e.language}">{e.title}</a></li>'
                      for e in built)
    _write(out / "index.html", f"""<!DOCTYPE html>
<html lang="{first.language}">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="0; url={first.lang}/index.html">
<title>{first.title}</title>
<link rel="icon" href="{first.lang}/_static/favicon.svg">
</head>
<body>
<ul>
{links}
</ul>
</body>
</html>
""")


# ---------------------------------------------------------------------------------------------
# Checking the built HTML


class _Refs(html.parser.HTMLParser):
    """Every URL a page refers to (tag, attribute, value) and every id it defines."""

    URL_ATTRIBUTES = {"href", "src", "poster", "data"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str, str, dict]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        for name in ("id", "name"):
            if attributes.get(name):
                self.ids.add(attributes[name])
        for name, value in attrs:
            if value is None:
                continue
            if name in self.URL_ATTRIBUTES:
                self.refs.append((tag, name, value.strip(), attributes))
            elif name == "srcset":
                for candidate in value.split(","):
                    if candidate.strip():
                        self.refs.append((tag, name, candidate.split()[0], attributes))

    handle_startendtag = handle_starttag


CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)|@import\s+(['"])([^'"]+)\3""")


def _external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.netloc) or parts.scheme not in ("", "file")


def _is_asset(tag: str, attribute: str, attributes: dict) -> bool:
    """What the browser loads by itself: scripts, stylesheets, fonts, images, frames..."""
    if tag == "a":
        return False
    if tag == "link":
        rel = set((attributes.get("rel") or "").lower().split())
        return bool(rel & {"stylesheet", "preload", "modulepreload", "icon", "prefetch", "manifest"})
    return True


def check_site(out: Path) -> list[str]:
    """Problems in the built site: broken internal links, anchors and images; external assets."""
    out = out.resolve()
    # the pages, not the theme's template fragments that it copies into _static/
    pages = sorted(p for p in out.rglob("*.html") if "_static" not in p.relative_to(out).parts)
    parsed: dict[Path, _Refs] = {}
    for page in pages:
        refs = _Refs()
        refs.feed(page.read_text(encoding="utf-8", errors="replace"))
        parsed[page] = refs
    problems = []
    for page, refs in parsed.items():
        where = page.relative_to(out)
        for tag, attribute, url, attributes in refs.refs:
            if not url or url.startswith(("mailto:", "javascript:", "data:", "tel:")):
                continue
            if _external(url):
                if _is_asset(tag, attribute, attributes):
                    problems.append(f"{where}: <{tag} {attribute}> loads {url} from another host")
                continue
            parts = urlsplit(url)
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if out not in target.parents and target != out:
                problems.append(f"{where}: <{tag} {attribute}> {url} points outside the site")
            elif not target.is_file():
                problems.append(f"{where}: <{tag} {attribute}> {url}: no such file")
            elif parts.fragment and target.suffix == ".html" and target in parsed:
                if unquote(parts.fragment) not in parsed[target].ids:
                    problems.append(f"{where}: <{tag} {attribute}> {url}: no such anchor")
    for sheet in sorted(out.rglob("*.css")):
        text = re.sub(r"/\*.*?\*/", "", sheet.read_text(encoding="utf-8", errors="replace"), flags=re.S)
        for match in CSS_URL.finditer(text):
            url = (match.group(2) or match.group(4)).strip()
            if url.startswith(("data:", "#")):
                continue
            where = sheet.relative_to(out)
            if _external(url):
                problems.append(f"{where}: url({url}) loads from another host")
            elif not (sheet.parent / unquote(urlsplit(url).path)).resolve().is_file():
                problems.append(f"{where}: url({url}): no such file")
    return problems


def site_size(out: Path) -> int:
    return sum(p.stat().st_size for p in out.rglob("*") if p.is_file())


def build(langs: list[str] | None = None, out: Path = OUT, check: bool = True) -> list[Edition]:
    chosen = editions(langs)
    for edition in chosen:
        started = time.perf_counter()
        pages = stage(edition, STAGING / edition.lang)
        sphinx_build(edition, STAGING / edition.lang, out / edition.lang, CACHE / edition.lang)
        print(f"{edition.lang}: {len(pages['lessons'])} lessons, {len(pages['deep_dives'])} deep dives "
              f"-> {out / edition.lang / 'index.html'} ({time.perf_counter() - started:.1f} s)")
    write_root_index(out, [e for e in editions() if (out / e.lang / "index.html").is_file()])
    if check:
        problems = check_site(out)
        if problems:
            shown = "\n".join(f"  {p}" for p in problems[:50])
            more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
            raise SiteError(f"{len(problems)} problem(s) in the built site:\n{shown}{more}")
    print(f"site: {out}/index.html, {site_size(out) / 2**20:.1f} MiB, links and assets checked")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", action="append", help="edition(s) to build (default: every one)")
    parser.add_argument("--out", type=Path, default=OUT,
                        help=f"output folder (default {OUT.relative_to(ROOT)})")
    parser.add_argument("--no-check", action="store_true", help="skip the link and asset check")
    args = parser.parse_args(argv)
    try:
        build(args.lang, args.out.resolve(), check=not args.no_check)
    except SiteError as error:
        print(f"build_site: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
