"""The command line debugger: the ``pyframe`` command, or ``python -m pyframe``.

``locals`` reports (or, with ``-i``, stops at) the entry slots of every frame a
program starts; ``run`` runs a program under a callback of the user's own.

The program runs as ``python script.py`` or ``python -m module`` would run it.
The callback is installed only around the ``exec`` of the program's code (and
around the threads it starts), so the first frame it sees is the program's
``<module>`` and no frame of this package ever reaches it.

One module a concern: ``program`` runs the program as Python would;
``filters`` chooses the frames ``locals`` reports by their code;
``conditions`` is ``--where``; ``locals_callback`` is ``locals``' callback,
in every thread, showing one frame at a time; ``threads`` puts it in each
thread the program starts; ``resumptions`` sees coroutines start in their
tasks and generators resume; ``seen`` is what is shown of a frame;
``reports`` writes it as text or JSON; ``console`` is ``locals -i``'s command
loop; ``user_callback`` loads ``run --callback``; ``command_line`` parses the
arguments and holds ``main()``; ``errors`` says what went wrong in one line.
"""

from pyframe.cli.command_line import console_script, main

__all__ = ["console_script", "main"]
