"""The docstrings are the API reference's single source: the site's reference page
(docs/reference.md, mkdocstrings) renders fastcopy/__init__.pyi, whose docstrings must be the
running module's own (the C core's PyDoc_STRVAR texts, the Python modules' docstrings), word for
word, so help() and the site say the same.  Runs against an installed wheel too (the stub ships)."""
import ast
import inspect
import os
import unittest

import fastcopy

STUB = os.path.join(os.path.dirname(os.path.abspath(fastcopy.__file__)), "__init__.pyi")

# Names that are the stdlib's own objects: their docstrings are not ours to mirror.
STDLIB = {"Error", "error", "replace"}


def _defs(body):
    """Functions and classes of a stub body, including those under `if sys.version_info`."""
    out = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.If):
            for name, nodes in _defs(node.body).items():
                out.setdefault(name, []).extend(nodes)
    return out


@unittest.skipUnless(os.path.isfile(STUB), "the package has no stub here")
class StubDocstrings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(STUB, encoding="utf-8") as f:
            cls.tree = ast.parse(f.read())
        cls.defs = _defs(cls.tree.body)

    def test_every_public_name_is_documented_in_the_stub(self):
        for name in fastcopy.__all__:
            if name in STDLIB:
                continue
            with self.subTest(name=name):
                self.assertIn(name, self.defs)
                node = self.defs[name][-1]
                self.assertTrue(ast.get_docstring(node), name)
                self.assertTrue(inspect.getdoc(getattr(fastcopy, name)), name)

    def test_stub_docstrings_are_the_runtime_docstrings(self):
        checked = 0
        for name, nodes in self.defs.items():
            if name.startswith("_") or name in STDLIB or not hasattr(fastcopy, name):
                continue
            obj = getattr(fastcopy, name)
            pairs = [(name, nodes[-1], obj)]
            if isinstance(nodes[-1], ast.ClassDef):
                for member, mnodes in _defs(nodes[-1].body).items():
                    if ast.get_docstring(mnodes[-1]) is not None:
                        pairs.append(("%s.%s" % (name, member), mnodes[-1],
                                      inspect.getattr_static(obj, member)))
            for qual, node, runtime in pairs:
                stub_doc = ast.get_docstring(node)
                if stub_doc is None:
                    continue
                with self.subTest(name=qual):
                    self.assertEqual(stub_doc, inspect.getdoc(runtime))
                    checked += 1
        # the drop-ins, patching, settings, cowdict, profiler and snapshot at least
        self.assertGreaterEqual(checked, 20)

    def test_c_functions_document_their_arguments(self):
        # the reference renders Args:/Returns: sections as tables
        for name in ("deepcopy", "copy", "replicate"):
            doc = inspect.getdoc(getattr(fastcopy, name))
            self.assertIn("\nArgs:\n", doc, name)
            self.assertIn("\nReturns:\n", doc, name)
        for option in fastcopy.configure():
            self.assertIn("\n%s (" % option, inspect.getdoc(fastcopy.configure))


if __name__ == "__main__":
    unittest.main()
