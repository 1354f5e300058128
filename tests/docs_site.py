"""Helpers for the docs tests: find a Python with MkDocs (the `docs` extra), build a site with
the project's own mkdocs.yml, read anchors from the built pages.  Not a test module."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "mkdocs.yml")


def docs_python():
    """A Python that can run mkdocs: $FASTCOPY_DOCS_PYTHON, this one, or the tools venv that
    scripts/docs_check.sh makes (build/venv-tools); None if there is none."""
    candidates = [os.environ.get("FASTCOPY_DOCS_PYTHON"), sys.executable,
                  os.path.join(ROOT, "build", "venv-tools", "bin", "python")]
    for py in candidates:
        if py and os.path.isfile(py) and subprocess.run(
                [py, "-c", "import mkdocs, material, mkdocstrings_handlers.python"],
                capture_output=True).returncode == 0:
            return py
    return None


def skip_unless_docs():
    """SkipTest unless this is a checkout with mkdocs.yml and MkDocs is installed somewhere."""
    if not os.path.isfile(CONFIG):
        raise unittest.SkipTest("no mkdocs.yml here (the suite runs against an installed wheel)")
    py = docs_python()
    if py is None:
        raise unittest.SkipTest('MkDocs not installed: pip install -e ".[docs]" or '
                                "bash scripts/docs_check.sh")
    return py


def mkdocs_build(py, config, site_dir):
    """`mkdocs build --strict` of config into site_dir: (returncode, output)."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([py, "-m", "mkdocs", "build", "--strict", "-f", config,
                           "-d", site_dir], cwd=os.path.dirname(config), capture_output=True,
                          text=True, timeout=300, env=env)
    return proc.returncode, proc.stdout + proc.stderr


class Tree:
    """A throwaway MkDocs project that inherits the project's mkdocs.yml (theme, markdown
    extensions, validation) with its own pages: the same rules, other content."""

    def __init__(self, testcase, pages):
        tmp = tempfile.TemporaryDirectory()
        testcase.addCleanup(tmp.cleanup)
        self.root = tmp.name
        for name, text in pages.items():
            path = os.path.join(self.root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        nav = [n[len("docs/"):] for n in pages if n.startswith("docs/") and n.endswith(".md")]
        self.config = os.path.join(self.root, "mkdocs.yml")
        with open(self.config, "w", encoding="utf-8") as f:
            f.write("INHERIT: %s\nsite_name: test\ndocs_dir: docs\nnav: [%s]\n"
                    % (CONFIG, ", ".join(nav)))
        self.site = os.path.join(self.root, "site")

    def build(self, py):
        return mkdocs_build(py, self.config, self.site)


def ids(html_path):
    """The id attributes of a built page (its headings' anchors among them)."""
    with open(html_path, encoding="utf-8") as f:
        return set(re.findall(r'\sid="([^"]+)"', f.read()))


def built_page(site, page):
    """The HTML file mkdocs writes for docs/<page>.md (directory URLs: <page>/index.html)."""
    name = page[:-3] if page.endswith(".md") else page
    return os.path.join(site, "index.html" if name == "index" else os.path.join(name, "index.html"))
