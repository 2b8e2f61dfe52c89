from prunesim.launch import entry

entry()
