"""Scenario files shipped with prunesim (TOML). ``prunesim list`` shows them."""
