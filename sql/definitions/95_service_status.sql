-- Definitions: service status. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Policies

DROP POLICY IF EXISTS service_notices_delete ON public.service_notices;
CREATE POLICY service_notices_delete ON public.service_notices FOR DELETE USING (false);

DROP POLICY IF EXISTS service_notices_insert ON public.service_notices;
CREATE POLICY service_notices_insert ON public.service_notices FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS service_notices_select ON public.service_notices;
CREATE POLICY service_notices_select ON public.service_notices FOR SELECT USING (true);

DROP POLICY IF EXISTS service_notices_update ON public.service_notices;
CREATE POLICY service_notices_update ON public.service_notices FOR UPDATE USING (false) WITH CHECK (false);
