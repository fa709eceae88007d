from prebake.cli import main

raise SystemExit(main())
