"""Tracebacks through a patched copy.deepcopy / copy.copy point at real lines of real files.

patch() swaps the stdlib functions' __code__ for the trampoline in fastcopy/_trampoline.py.
Calls that go straight into C (src/module.c, "patch()") leave no frame; the others -- every
call from Python code on 3.11, unusual argument shapes everywhere -- run the trampoline's frame,
and that frame must name a file that exists and a line that holds its code.
"""
import copy
import inspect
import linecache
import os
import traceback
import unittest

try:
    import fastcopy
    from fastcopy import _trampoline
except ImportError as exc:  # the C core is not built
    fastcopy = None
    MISSING = str(exc)
else:
    MISSING = ""


class Boom:
    def __deepcopy__(self, memo):
        raise ValueError("boom from __deepcopy__")

    def __copy__(self):
        raise ValueError("boom from __copy__")


def frames_of(call):
    try:
        call()
    except (ValueError, TypeError) as exc:
        return traceback.extract_tb(exc.__traceback__)
    raise AssertionError("no exception")


@unittest.skipIf(fastcopy is None, MISSING)
class PatchedTracebacks(unittest.TestCase):
    from copy import deepcopy as early_deepcopy   # bound before any patch

    CALLS = {
        "deepcopy(x)": lambda: copy.deepcopy([Boom()]),
        "deepcopy(x, memo)": lambda: copy.deepcopy([Boom()], {}),
        "deepcopy(x, memo, _nil)": lambda: copy.deepcopy([Boom()], {}, []),
        "deepcopy(x, memo=m)": lambda: copy.deepcopy(Boom(), memo={}),
        # keyword shapes the C entry point hands to the trampoline on every version (3.15
        # has no _nil: its binding error comes from the trampoline all the same)
        "deepcopy(x, memo=m, _nil=n)": lambda: copy.deepcopy(Boom(), memo={}, _nil=[]),
        "deepcopy(x=x)": lambda: copy.deepcopy(x=Boom()),
        "copy(x)": lambda: copy.copy(Boom()),
        "copy(x=x)": lambda: copy.copy(x=Boom()),
        # a binding error raised by the interpreter for the trampoline
        "deepcopy(x, memo, _nil, extra)": lambda: copy.deepcopy(Boom(), None, [], 4),
        "early reference": lambda: PatchedTracebacks.early_deepcopy(Boom()),
        "called from C": lambda: list(map(copy.deepcopy, [Boom()])),
    }
    # (3.15: no _nil, so that call fails to bind, before any frame of the trampoline's)
    THROUGH_TRAMPOLINE = (("deepcopy(x, memo=m, _nil=n)",)
                          if "_nil" in inspect.signature(copy.deepcopy).parameters else ()) \
        + ("deepcopy(x=x)", "copy(x=x)")

    def check_frames(self, name, frames):
        for fr in frames:
            self.assertTrue(os.path.isfile(fr.filename), (name, fr))
            self.assertTrue(linecache.getline(fr.filename, fr.lineno).strip(), (name, fr))

    def test_every_frame_is_a_real_line(self):
        with fastcopy.patched():
            for name, call in self.CALLS.items():
                with self.subTest(name):
                    self.check_frames(name, frames_of(call))

    def test_trampoline_frame_shows_its_call(self):
        tramp = os.path.realpath(_trampoline.__file__)
        with fastcopy.patched():
            for name in self.THROUGH_TRAMPOLINE:
                with self.subTest(name):
                    frames = [fr for fr in frames_of(self.CALLS[name])
                              if os.path.realpath(fr.filename) == tramp]
                    self.assertEqual(len(frames), 1, name)
                    fr = frames[0]
                    self.assertEqual(fr.name, "copy" if name.startswith("copy") else "deepcopy")
                    want = fastcopy._G_COPY if fr.name == "copy" else fastcopy._G_DEEP
                    self.assertIn(want + "(", linecache.getline(fr.filename, fr.lineno))

    def test_trampoline_calls_the_names_patch_sets(self):
        self.assertIn(fastcopy._G_DEEP, fastcopy._TRAMP_DEEPCOPY.co_names)
        self.assertIn(fastcopy._G_COPY, fastcopy._TRAMP_COPY.co_names)

    def test_unpatched_frames_are_the_stdlibs(self):
        with fastcopy.patched():
            pass
        self.assertFalse(fastcopy.is_patched())
        frames = frames_of(lambda: copy.deepcopy(Boom(), memo={}))
        self.check_frames("unpatched", frames)
        self.assertIn(os.path.realpath(copy.__file__),
                      [os.path.realpath(fr.filename) for fr in frames])


if __name__ == "__main__":
    unittest.main()
