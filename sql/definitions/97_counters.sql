-- Definitions: counters. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Views

CREATE OR REPLACE VIEW public.counter_differences WITH (security_invoker='true') AS
 SELECT 'unread_count'::text AS counter,
    m.diary_id,
    m.user_id,
    m.unread_count AS stored,
    actual.count AS actual
   FROM (public.diary_members m
     CROSS JOIN LATERAL ( SELECT (count(*))::integer AS count
           FROM public.entries e
          WHERE ((e.diary_id = m.diary_id) AND (e.user_id <> m.user_id) AND (NOT (EXISTS ( SELECT 1
                   FROM public.entry_reads r
                  WHERE ((r.diary_id = e.diary_id) AND (r.entry_id = e.id) AND (r.user_id = m.user_id))))))) actual)
  WHERE (m.unread_count <> actual.count)
UNION ALL
 SELECT 'entry_count'::text AS counter,
    d.id AS diary_id,
    NULL::uuid AS user_id,
    d.entry_count AS stored,
    actual.count AS actual
   FROM (public.diaries d
     CROSS JOIN LATERAL ( SELECT (count(*))::integer AS count
           FROM public.entries e
          WHERE (e.diary_id = d.id)) actual)
  WHERE (d.entry_count <> actual.count);
