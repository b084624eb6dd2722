-- job: what there is to do (unfenced). job_done: written only by the leader's TaskWork, fenced for resource 'work'.
CREATE TABLE job (id bigint PRIMARY KEY);
CREATE TABLE job_done (job_id bigint PRIMARY KEY REFERENCES job (id));
SELECT fencing.protect_table('job_done'::regclass, 'work');
