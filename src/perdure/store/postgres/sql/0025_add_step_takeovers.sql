-- Attempts counted across crashes. A claim of a run whose lease another worker still held
-- (it died or stalled mid-step) runs the step in progress again: that is another attempt of
-- it, though no failure was recorded. The claim that takes the run over counts it here, in
-- the write it already makes: step_takeovers is how many takeovers the step at takeover_step
-- (the run's steps_done when it was last taken over) has had. A boundary leaves both alone:
-- once steps_done moves past takeover_step the count belongs to a step already committed.
-- (Adding a column with a constant default rewrites no rows.)
ALTER TABLE perdure.runs
    ADD COLUMN step_takeovers integer NOT NULL DEFAULT 0,
    ADD COLUMN takeover_step integer;
