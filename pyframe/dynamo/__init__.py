"""pyframe.dynamo: TorchDynamo (torch.compile) running on pyframe's frame layer.

``pyframe.dynamo.install()`` puts pyframe in place of Dynamo's C frame layer
(``torch._C._dynamo.eval_frame``: its PEP 523 function, per-code cache and
strategies) for the whole process; torch.compile, torch._dynamo and
torch.compiler then run unchanged on it, with every option.
``uninstall()`` gives Dynamo its own layer back; ``installed()`` is both as
a context manager.  Setting ``PYFRAME_DYNAMO=1`` in the environment installs
it in every Python process started with it (through the pyframe-dynamo.pth
file pyframe's wheel installs), once torch._dynamo is imported.

Supports torch 2.11 to 2.15; importing it with another torch is an
ImportError naming them.  Importing pyframe alone never imports torch.
README.md, "TorchDynamo on pyframe", says what is covered.
"""

from .. import _dynamo_startup
from ._compile import compile
from ._install import install, installed, is_installed, uninstall
from ._torch_compat import SUPPORTED  # noqa: F401  (first: refuses other releases)

__all__ = ["compile", "install", "installed", "is_installed", "uninstall"]

# PYFRAME_DYNAMO=1 with torch._dynamo first imported by this package's own
# import (`import torch, pyframe.dynamo`): installs now that it is complete.
_dynamo_startup.install_deferred(install)
