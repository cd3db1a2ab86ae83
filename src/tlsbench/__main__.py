from tlsbench.cli import main

raise SystemExit(main())
