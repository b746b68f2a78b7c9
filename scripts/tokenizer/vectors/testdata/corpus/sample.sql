-- SQL sample
CREATE TABLE IF NOT EXISTS users (
    id          BIGSERIAL PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    score       NUMERIC(10, 2) CHECK (score >= 0)
);

SELECT u.id, u.email, COUNT(o.id) AS orders, SUM(o.total)::money
FROM users AS u
LEFT JOIN orders o ON o.user_id = u.id AND o.status <> 'cancelled'
WHERE u.created_at >= '2024-01-01'::date
GROUP BY 1, 2
HAVING COUNT(o.id) > 3
ORDER BY orders DESC NULLS LAST
LIMIT 50 OFFSET 100;
