-- Definitions: export. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.record_export(daily_limit integer) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := require_caller();
begin
    delete from export_days d where d.user_id = caller and d.day < (now() at time zone 'UTC')::date - 2;
    insert into export_days as d (user_id, day, exports)
    values (caller, (now() at time zone 'UTC')::date, 1)
    on conflict (user_id, day) do update set exports = d.exports + 1 where d.exports < daily_limit;
    return found;
end
$$;

COMMENT ON FUNCTION public.record_export(daily_limit integer) IS 'Counts an export the caller starts, unless the day''s limit (diary and personal exports together) is reached: then false.';

REVOKE ALL ON FUNCTION public.record_export(daily_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.record_export(daily_limit integer) TO diary_app;

-- Policies

DROP POLICY IF EXISTS export_days_delete ON public.export_days;
CREATE POLICY export_days_delete ON public.export_days FOR DELETE USING (false);

DROP POLICY IF EXISTS export_days_insert ON public.export_days;
CREATE POLICY export_days_insert ON public.export_days FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS export_days_select ON public.export_days;
CREATE POLICY export_days_select ON public.export_days FOR SELECT USING ((user_id = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS export_days_update ON public.export_days;
CREATE POLICY export_days_update ON public.export_days FOR UPDATE USING (false) WITH CHECK (false);
