import sys

from server.cli.main import main

sys.exit(main())
