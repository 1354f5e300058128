"""Start-up hook: ``FASTCOPY_AUTOPATCH=1 python app.py`` runs ``app.py`` with fastcopy patched in.

Installed twice: as ``fastcopy._autopatch`` and, by setup.py's ``build_py``, as the top-level
module ``_fastcopy_autopatch`` that the start-up files name:

- ``fastcopy-autopatch.pth`` (every Python): one ``import`` line that tests the variable itself
  and only then imports this module and calls ``run()``, so an unset variable costs no import.
- ``fastcopy-autopatch.start`` (PEP 829, Python 3.15+): ``_fastcopy_autopatch:run``.  Where it is
  honoured, a ``.start`` file disables the ``import`` lines of the ``.pth`` of the same name, so
  ``run()`` is called exactly once on every version.  Entry points cannot be gated before the
  import, so there the top-level copy is imported at every start.

The top-level copy exists so that neither path imports the ``fastcopy`` package (and its C core)
when the variable is unset: this module imports nothing but ``os``, which ``site`` has already
imported.  Keep it that way.

PYTEST_DONT_REWRITE: pytest marks every top-level module of a plugin's distribution for assertion
rewriting and warns about those already imported, as this one is when FASTCOPY_AUTOPATCH=1.
"""
import os

ENV = "FASTCOPY_AUTOPATCH"


def run():
    """Patch ``copy.deepcopy``/``copy.copy`` if ``FASTCOPY_AUTOPATCH`` is exactly ``"1"``."""
    if os.environ.get(ENV) != "1":
        return
    try:
        import fastcopy
        fastcopy.patch()
    except Exception as exc:  # never break interpreter start-up
        import sys
        sys.stderr.write(f"fastcopy: {ENV}=1 but patching failed: {exc!r}\n")
