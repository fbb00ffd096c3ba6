import sys

from simulator.entry import main

sys.exit(main())
