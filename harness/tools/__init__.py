"""Environment tools served by one long-lived process per trial (see ``server``)."""
