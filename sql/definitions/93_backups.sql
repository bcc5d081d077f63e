-- Definitions: backups. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Policies

DROP POLICY IF EXISTS backup_runs_delete ON public.backup_runs;
CREATE POLICY backup_runs_delete ON public.backup_runs FOR DELETE USING (false);

DROP POLICY IF EXISTS backup_runs_insert ON public.backup_runs;
CREATE POLICY backup_runs_insert ON public.backup_runs FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS backup_runs_select ON public.backup_runs;
CREATE POLICY backup_runs_select ON public.backup_runs FOR SELECT USING (true);

DROP POLICY IF EXISTS backup_runs_update ON public.backup_runs;
CREATE POLICY backup_runs_update ON public.backup_runs FOR UPDATE USING (false) WITH CHECK (false);
