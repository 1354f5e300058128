"""docs/build.py: the pages build, and no relative link in them (or in the READMEs) leads nowhere.

A link is broken when the file it names does not exist, or when its #fragment is not one of the
target's heading anchors as GitHub makes them.  The built HTML pages are checked the same way.
"""
import importlib.util
import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isfile(os.path.join(ROOT, "docs", "build.py")):
    raise unittest.SkipTest("no docs/ here (the suite runs against an installed wheel)")


def load_build():
    spec = importlib.util.spec_from_file_location("fastcopy_docs_build",
                                                  os.path.join(ROOT, "docs", "build.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build = load_build()


class TestSlug(unittest.TestCase):
    def test_github_slugs(self):
        cases = {
            "Benchmarks": "benchmarks",
            "Batching (`configure(torch_defer=...)`, on by default)":
                "batching-configuretorch_defer-on-by-default",
            "Declined: the walker calls the object's own `__deepcopy__` (same memo)":
                "declined-the-walker-calls-the-objects-own-__deepcopy__-same-memo",
            "The `nested` workload: a 400-level chain of two-key dicts":
                "the-nested-workload-a-400-level-chain-of-two-key-dicts",
            "See [the API](api.md) **now**": "see-the-api-now",
            "a  b": "a--b",
            "Ünïcode stays": "ünïcode-stays",
        }
        for heading, want in cases.items():
            self.assertEqual(build.slug(heading), want, heading)

    def test_anchors_dedup_and_skip_code(self):
        text = "# A\n\n## A\n\n```\n# not a heading\n```\n\n### A ###\n<a id=\"here\"></a>\n"
        self.assertEqual(build.anchors(text), {"a", "a-1", "a-2", "here"})


class TestBrokenLinks(unittest.TestCase):
    def tree(self, files):
        import tempfile
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        for name, text in files.items():
            path = os.path.join(tmp.name, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return tmp.name

    def test_finds_missing_files_and_headings(self):
        root = self.tree({
            "README.md": "# fastcopy\n\n## Benchmarks\n",
            "docs/a.md": "# A\n\n## Here\n\n"
                         "[ok](../README.md#benchmarks) [ok](#here) [ok](b.md) "
                         "[ok](https://example.org/x.md#nope) [ok](../README.md)\n"
                         "[bad](../README.md#benchmark) [bad](#there) [bad](c.md) "
                         "[bad](../docs/b.md#x)\n"
                         "`[code](nowhere.md)`\n\n```\n[code](nowhere.md)\n```\n",
            "docs/b.md": "# B\n",
        })
        got = build.broken_links(os.path.join(root, "docs", "a.md"))
        links = [g.split(" -> ")[1] for g in got]
        self.assertEqual(links, ["../README.md#benchmark (no such heading)",
                                 "#there (no such heading)",
                                 "c.md (no such file)",
                                 "../docs/b.md#x (no such heading)"])


class TestTree(unittest.TestCase):
    def test_no_broken_links(self):
        import tempfile
        with tempfile.TemporaryDirectory() as out:
            # built outside docs/: links leaving docs/ are re-rooted from wherever out is
            names, broken = build.build(os.path.join(out, "site"))
            self.assertIn("api", names)
            self.assertEqual(broken, [])
            with open(os.path.join(out, "site", "performance.html"), encoding="utf-8") as f:
                page = f.read()
        # the README link out of docs/ must resolve from the built page, not from docs/
        self.assertNotIn('href="../README.md', page)


if __name__ == "__main__":
    unittest.main()
