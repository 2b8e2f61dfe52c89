from prunesim.cli import entry

entry()
