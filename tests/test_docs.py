"""The docs site (MkDocs + Material + mkdocstrings, mkdocs.yml): the real pages build under
--strict with their charts and the API reference, the navigation is docs/index.md's list of pages,
the front page's example runs, and the strict build refuses a link that leads nowhere -- a missing
page or file, or a #fragment that is none of the target's heading anchors, which are made as
GitHub makes them so that one link works in both places."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

import fastcopy

from docs_site import ROOT, Tree, built_page, ids, mkdocs_build, skip_unless_docs

PY = None


def setUpModule():
    global PY
    PY = skip_unless_docs()


class TestSlug(unittest.TestCase):
    """Heading anchors on the site are GitHub's (toc's slugify is pymdownx's, lower case)."""

    GITHUB = {
        "Benchmarks": "benchmarks",
        "Batching (`configure(torch_defer=...)`, on by default)":
            "batching-configuretorch_defer-on-by-default",
        "Declined: the walker calls the object's own `__deepcopy__` (same memo)":
            "declined-the-walker-calls-the-objects-own-__deepcopy__-same-memo",
        "The `nested` workload: a 400-level chain of two-key dicts":
            "the-nested-workload-a-400-level-chain-of-two-key-dicts",
        "See [the API](b.md) **now**": "see-the-api-now",
        "Ünïcode stays": "ünïcode-stays",
    }

    def test_github_slugs(self):
        text = "# A\n\n" + "".join("## %s\n\n" % h for h in self.GITHUB)
        tree = Tree(self, {"docs/a.md": text, "docs/b.md": "# B\n"})
        rc, out = tree.build(PY)
        self.assertEqual(rc, 0, out)
        got = ids(built_page(tree.site, "a.md"))
        for heading, want in self.GITHUB.items():
            self.assertIn(want, got, heading)

    def test_where_github_differs_a_github_link_is_an_error(self):
        # GitHub keeps both spaces of "a  b" (a--b) and numbers repeats -1, -2; the site makes
        # a-b and a_1.  A link written for GitHub there fails the build rather than half-working.
        tree = Tree(self, {"docs/a.md": "# A\n\n## a  b\n\n## A\n\n[x](#a--b) [y](#a-1)\n"})
        rc, out = tree.build(PY)
        self.assertNotEqual(rc, 0)
        self.assertIn("'#a--b'", out)
        self.assertIn("'#a-1'", out)


class TestBrokenLinks(unittest.TestCase):
    def test_finds_missing_files_and_headings(self):
        tree = Tree(self, {
            "docs/a.md": "# A\n\n## Here\n\n"
                         "[ok](#here) [ok](b.md) [ok](b.md#there) [ok](https://example.org/x.md#nope)\n"
                         "[bad](#nowhere) [bad](c.md) [bad](b.md#x) [bad](../README.md#benchmarks)\n"
                         "`[code](nowhere.md)`\n\n```\n[code](nowhere2.md)\n```\n",
            "docs/b.md": "# B\n\n## There\n",
            "README.md": "# Top\n\n## Benchmarks\n",
        })
        rc, out = tree.build(PY)
        self.assertNotEqual(rc, 0, out)
        warnings = [line for line in out.splitlines() if line.startswith("WARNING")]
        for bad in ("'#nowhere'", "'c.md'", "'b.md#x'", "'../README.md#benchmarks'"):
            self.assertEqual(sum(bad in w for w in warnings), 1, (bad, warnings))
        # nothing else: good links, URLs and links inside code are not reported
        self.assertEqual(len(warnings), 4, warnings)

    def test_clean_tree_builds(self):
        tree = Tree(self, {"docs/a.md": "# A\n\n## Here\n\n[ok](#here) [ok](b.md#there)\n",
                           "docs/b.md": "# B\n\n## There\n"})
        rc, out = tree.build(PY)
        self.assertEqual(rc, 0, out)


class TestTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.site = os.path.join(cls.tmp.name, "site")
        cls.rc, cls.out = mkdocs_build(PY, os.path.join(ROOT, "mkdocs.yml"), cls.site)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_strict_build_is_clean(self):
        self.assertEqual(self.rc, 0, self.out)

    def test_every_page_is_built_and_in_the_nav(self):
        pages = sorted(f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
        for page in pages:
            self.assertTrue(os.path.isfile(built_page(self.site, page)), page)
        with open(os.path.join(ROOT, "mkdocs.yml"), encoding="utf-8") as f:
            nav = re.findall(r"^  - [^:\n]+: (\S+\.md)$", f.read(), re.M)
        self.assertEqual(sorted(nav), pages)
        # the nav follows docs/index.md's list of pages, in order
        with open(os.path.join(ROOT, "docs", "index.md"), encoding="utf-8") as f:
            index = f.read()
        items = re.findall(r"^- \[.*$", index.split("## Pages", 1)[1].split("\n## ", 1)[0], re.M)
        listed = [page for item in items for page in re.findall(r"\]\(([\w-]+\.md)\)", item)]
        self.assertEqual(nav, ["index.md"] + listed)

    def test_search_and_navigation(self):
        self.assertTrue(os.path.isfile(os.path.join(self.site, "search", "search_index.json")))
        with open(built_page(self.site, "performance.md"), encoding="utf-8") as f:
            page = f.read()
        self.assertIn('href="../reference/"', page)          # the nav reaches every page
        self.assertIn("md-search", page)                     # Material's search box

    def test_charts_are_copied(self):
        for name in os.listdir(os.path.join(ROOT, "docs", "img")):
            self.assertTrue(os.path.isfile(os.path.join(self.site, "img", name)), name)

    def test_reference_documents_every_public_name(self):
        with open(built_page(self.site, "reference.md"), encoding="utf-8") as f:
            page = f.read()
        anchors = ids(built_page(self.site, "reference.md"))
        for name in fastcopy.__all__:
            if name in ("Error", "error", "replace"):   # the stdlib's own: described in prose
                self.assertIn("<code>%s</code>" % ("Error" if name == "error" else name), page)
                continue
            self.assertIn("fastcopy.%s" % name, anchors, name)
        # signatures come from the stub, C functions included
        self.assertIn("share", page)
        for option in fastcopy.configure():
            self.assertIn(option, page)


class TestExamples(unittest.TestCase):
    def test_front_page_example_runs(self):
        with open(os.path.join(ROOT, "docs", "index.md"), encoding="utf-8") as f:
            blocks = re.findall(r"^```python\n(.*?)^```", f.read(), re.M | re.S)
        self.assertTrue(blocks)
        for code in blocks:
            code += ("\nimport copy\nassert clone == copy.deepcopy(state) and clone is not state"
                     "\nassert clone['config'] is not state['config']"
                     "\nassert shallow['config'] is state['config']\n")
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                  cwd=ROOT, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)


if __name__ == "__main__":
    unittest.main()
