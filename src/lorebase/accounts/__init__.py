"""Users, teams, API keys and who may see what (see ``access.py``)."""
