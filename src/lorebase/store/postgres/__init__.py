"""The PostgreSQL + pgvector backend (the ``postgres`` extra): one database shared by every
lorebase process, on any number of machines."""
