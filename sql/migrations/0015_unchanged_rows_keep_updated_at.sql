-- An update that changes nothing (PATCH {} or a PATCH of only nulls, the same content
-- again) leaves updated_at alone: it says when the row last changed, not when it was last
-- written. The change log's triggers already fire only on a difference.
create or replace function set_updated_at() returns trigger
language plpgsql
set search_path = pg_catalog, public
as $$
begin
    if new is distinct from old then
        new.updated_at := now();
    end if;
    return new;
end
$$;
