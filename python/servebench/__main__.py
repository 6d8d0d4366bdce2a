"""``python -m servebench ARGS`` runs the servebench binary with ARGS."""

import os
import sys

from servebench import find_binary


def main() -> None:
    binary = find_binary()
    if sys.platform == "win32":
        import subprocess

        sys.exit(subprocess.call([binary, *sys.argv[1:]]))
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    main()
