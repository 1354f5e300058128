"""Reference functions for the C core's method checks (src/plan.c, ``fc_func_is``).

Before it copies a ``uuid.UUID``, a ``fractions.Fraction`` or an ``Enum`` member natively, the C
core checks that the stdlib method it stands in for is still the stdlib's code: it compares that
function's code object, field by field (bytecode, constants, names, variable names, argument
counts, flags), with the code object of the function of the same shape here.  This module is
imported with the package, so the references exist before the first copy, and that check
compiles and runs nothing: a copy raises no ``compile`` or ``exec`` audit event that the stdlib's
would not.  Nothing here is ever called.

Each body is the stdlib's, 3.10 to 3.13 alike, statement for statement: the bytecode of a
function depends on its text only, not on the file or the class it is written in (no docstrings
here: a docstring would be one of the code's constants).  The free names (``Fraction``,
``SafeUUID``) are the globals of the stdlib's modules, which the C core checks separately.
"""
# mypy: ignore-errors
# (the free names are the stdlib modules' globals, undefined here)


# enum.Enum.__deepcopy__ (3.11+)
def enum_deepcopy(self, memo):
    return self


# fractions.Fraction.__deepcopy__
def fraction_deepcopy(self, memo):
    if type(self) == Fraction:  # noqa: E721, F821
        return self
    return self.__class__(self._numerator, self._denominator)


# uuid.UUID.__getstate__
def uuid_getstate(self):
    d = {'int': self.int}
    if self.is_safe != SafeUUID.unknown:  # noqa: F821
        d['is_safe'] = self.is_safe.value
    return d


# uuid.UUID.__setstate__
def uuid_setstate(self, state):
    object.__setattr__(self, 'int', state['int'])
    object.__setattr__(self, 'is_safe',
                       SafeUUID(state['is_safe'])  # noqa: F821
                       if 'is_safe' in state else SafeUUID.unknown)  # noqa: F821
