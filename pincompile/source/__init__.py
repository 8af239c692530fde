"""Reading the spec tree: the working tree or a git revision, walked, loaded into positioned
YAML (libyaml, ruamel as the reference), with the file cache that skips unchanged files."""
