"""An example prunesim policy plugin (see docs/policies.md, "Your own policy")."""
