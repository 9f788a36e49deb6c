-- The guest book of /xsp/guestbook.xml (run once, when the database file
-- is created).
CREATE TABLE entries (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  message TEXT NOT NULL,
  at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M', 'now'))
);
INSERT INTO entries (name, message, at)
  VALUES ('Axle', 'The first entry. Sign below: your entry is inserted with bound parameters, whatever you type.', '2026-12-02 00:00');
