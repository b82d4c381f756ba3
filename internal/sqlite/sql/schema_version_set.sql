-- Records the schema version this package writes (the package's
-- SchemaVersion: a test checks the two agree), as the last statement of a
-- migration. A pragma takes no placeholder, so the number is written here.
-- SQLite only.

PRAGMA user_version = 4
