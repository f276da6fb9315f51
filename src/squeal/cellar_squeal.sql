-- cellar_squeal.sql -- the writer's side of cellar-squeal: a trigger that
-- names the cache keys a row change invalidates, inside the transaction
-- that changes it, so they are deleted from every cluster once (and only
-- if) it commits.
--
--   CREATE TRIGGER users_squeal AFTER INSERT OR UPDATE OR DELETE ON users
--     FOR EACH ROW EXECUTE FUNCTION cellar_squeal_invalidate('user:', 'id');
--
-- Arguments: the key's prefix, the column whose value follows it, and
-- optionally the message prefix cellar-squeal follows (default 'squeal').
-- An UPDATE that changes the column invalidates the old key and the new.
-- Applications may also call pg_logical_emit_message(true, 'squeal',
-- 'key1 key2 ...') themselves; keys are separated by white space.

CREATE OR REPLACE FUNCTION cellar_squeal_invalidate() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    pfx text := coalesce(TG_ARGV[2], 'squeal');
    newk text;
    oldk text;
BEGIN
    IF TG_OP <> 'DELETE' THEN
        newk := TG_ARGV[0] || (to_jsonb(NEW) ->> TG_ARGV[1]);
    END IF;
    IF TG_OP <> 'INSERT' THEN
        oldk := TG_ARGV[0] || (to_jsonb(OLD) ->> TG_ARGV[1]);
    END IF;
    IF newk IS NOT NULL AND oldk IS NOT NULL AND newk <> oldk THEN
        PERFORM pg_logical_emit_message(true, pfx, newk || ' ' || oldk);
    ELSIF coalesce(newk, oldk) IS NOT NULL THEN
        PERFORM pg_logical_emit_message(true, pfx, coalesce(newk, oldk));
    END IF;
    RETURN NULL;
END
$$;
