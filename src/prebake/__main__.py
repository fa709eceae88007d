from prebake.cli import entry

entry()
