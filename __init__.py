"""The checkout's root folder, seen by Python only when it runs in the folder above a checkout
named `tilec` (a plain clone's name): without this file `import tilec` would find the checkout
as an empty namespace package ahead of the installed package. Here the folder becomes the
package itself, laid out as pyproject.toml's package-dir says (`tilec` is compiler/, its
subpackages dialects/, passes/, lowering/, tools/ and compiler/*), so it is the same code."""

import os as _os

if __name__ == "tilec":
    _root = _os.path.dirname(_os.path.abspath(__file__))
    __path__ = [_os.path.join(_root, "compiler"), _root]
    __file__ = _os.path.join(_root, "compiler", "__init__.py")
    with open(__file__, encoding="utf-8") as _init:
        exec(compile(_init.read(), __file__, "exec"))
