"""The worked examples in the docstrings run and print what they say (examples that need files outside the
package are marked ``# doctest: +SKIP`` in place)."""

import doctest
import importlib
import pkgutil

import pytest

import ticktock

MODULES = sorted(m.name for m in pkgutil.walk_packages(ticktock.__path__, "ticktock.") if not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} docstring examples failed (see the output above)"
