"""One module per subcommand; ``prebake.cli`` discovers them (see its docstring)."""
