"""Build pyframe's one extension, pyframe._cframe, from Cython and cframe/.

Environment switches (the tox and CI builds set both):
  PYFRAME_WERROR=1  our C (cframe/*.c) is compiled with warnings as errors.
  PYFRAME_DEBUG=1   keep assert()s and debug information.  Release builds
                    (the default, and `make dist`'s wheels) compile the asserts
                    out and carry no debug information: -g0 overrides the -g in
                    the interpreter's own CFLAGS, so the extension is a few
                    hundred KiB instead of over a megabyte.
"""

import os
import runpy
import sys

# Refuse an unsupported interpreter before anything else can fail on it.
HERE = os.path.dirname(os.path.abspath(__file__))
_support = runpy.run_path(os.path.join(HERE, "pyframe", "_support.py"))
_reason = _support["unsupported_reason"]()
if _reason is not None:
    sys.exit("error: " + _reason)

from setuptools import Extension, setup  # noqa: E402
from setuptools.command.build_ext import build_ext  # noqa: E402
from setuptools.command.build_py import build_py  # noqa: E402


def _flag(name):
    return os.environ.get(name, "") not in ("", "0")


class BuildExt(build_ext):
    """Compile cframe/*.c with warnings as errors when PYFRAME_WERROR is set.

    Cython's generated C is left out of -Werror: its warnings are Cython's,
    not ours, and vary with the Cython version.
    """

    def finalize_options(self):
        super().finalize_options()
        # setuptools reuses object files and the built module when they are
        # newer than the sources, whatever flags made them: a release build
        # would link the objects of an earlier debug build.  Four files:
        # always compile them.
        self.force = True

    def build_extensions(self):
        compile_one = self.compiler._compile

        def compile_with_policy(obj, src, ext, cc_args, extra_postargs, pp_opts):
            ours = os.path.normpath(src).startswith("cframe" + os.sep) or (
                os.sep + "cframe" + os.sep in os.path.abspath(src)
            )
            if ours and _flag("PYFRAME_WERROR"):
                extra_postargs = list(extra_postargs) + ["-Werror"]
            compile_one(obj, src, ext, cc_args, extra_postargs, pp_opts)

        self.compiler._compile = compile_with_policy
        # A pyenv interpreter's LDSHARED adds -Wl,-rpath to its own lib/.  The
        # extension does not link libpython, so that would only write the
        # build machine's path into every wheel (auditwheel keeps it).
        self.compiler.linker_so = [
            arg for arg in self.compiler.linker_so if not arg.startswith("-Wl,-rpath")
        ]
        super().build_extensions()


class BuildPy(build_py):
    """Also puts pyframe-dynamo.pth at the top of the wheel, so that it lands
    in site-packages: PYFRAME_DYNAMO=1 then runs TorchDynamo on pyframe in
    every process (pyframe/_dynamo_startup.py)."""

    PTH = "pyframe-dynamo.pth"

    def run(self):
        super().run()
        if not self.editable_mode:
            self.copy_file(os.path.join(HERE, self.PTH), os.path.join(self.build_lib, self.PTH))

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, self.PTH)]


compile_args = ["-Wall", "-Wextra", "-Wno-unused-parameter", "-std=gnu11", "-fvisibility=hidden"]
link_args = []
if _flag("PYFRAME_DEBUG"):
    compile_args += ["-UNDEBUG", "-O1", "-g"]
else:
    # Last -g wins: drop the interpreter's -g; the linker drops what is left
    # (debug sections of static libgcc code, say).
    compile_args += ["-g0"]
    link_args += ["-Wl,--strip-debug"]

extension = Extension(
    "pyframe._cframe",
    sources=[
        "pyframe/_cframe.pyx",
        # cframe/'s layers, bottom up (cframe/pyframe.h draws them).
        "cframe/localsplus.c",
        "cframe/frame.c",
        "cframe/cache.c",
        "cframe/hook.c",
        "cframe/specialize_classes.c",
        "cframe/specialize.c",
        "cframe/eval_frame.c",
        "cframe/start.c",
    ],
    include_dirs=["cframe"],
    depends=[
        "cframe/compat.h",
        "cframe/pyframe.h",
        "cframe/localsplus.h",
        "cframe/frame.h",
        "cframe/cache.h",
        "cframe/hook.h",
        "cframe/specialize_classes.h",
        "cframe/eval_frame.h",
    ],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
)

setup(
    ext_modules=[extension],
    cmdclass={"build_ext": BuildExt, "build_py": BuildPy},
)
