"""Pure-Python domain services: no tornado and no jupyter imports live here."""
