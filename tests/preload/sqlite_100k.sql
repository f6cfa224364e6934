-- 100k rows built, indexed, queried and checked; deterministic output.
PRAGMA cache_size = -20000;
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, grp INTEGER, blob BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)
INSERT INTO t SELECT x, printf('name-%08d-%s', x, hex(x * 2654435761 % 1000003)), x * 1.5, x % 97,
                     zeroblob(x % 300) FROM c;
CREATE INDEX t_grp ON t(grp, v);
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(v), min(name), max(name), sum(length(blob)) FROM t;
SELECT grp, count(*), avg(v) FROM t GROUP BY grp ORDER BY grp LIMIT 5;
UPDATE t SET name = name || '-updated' WHERE id % 7 = 0;
DELETE FROM t WHERE id % 11 = 0;
SELECT count(*), sum(length(name)) FROM t;
SELECT a.grp, count(*) FROM t a JOIN t b ON a.id = b.id + 1 WHERE a.grp < 5 GROUP BY a.grp ORDER BY a.grp;
SELECT name FROM t WHERE name LIKE 'name-0009999%' ORDER BY name;
VACUUM;
PRAGMA integrity_check;
