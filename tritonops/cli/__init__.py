"""The command line: argument parsing and output. The only code that prints."""
