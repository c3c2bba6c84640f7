package pg

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trialform/trialform/state"
)

// checkName refuses names the local backend refuses, so a series is
// portable between backends.
func checkName(kind, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("invalid %s name %q for a metric series", kind, name)
	}
	return nil
}

// AppendMetrics appends points to one trial's series.
func (b *Backend) AppendMetrics(experiment, trial string, pts []state.MetricPoint) error {
	return b.AppendMetricsBatch([]state.MetricsBatch{{Experiment: experiment, Trial: trial, Points: pts}})
}

// AppendMetricsBatch appends every batch's points in one statement (one
// transaction): a point already there (the same type, sequence and value)
// is not appended again.
func (b *Backend) AppendMetricsBatch(batches []state.MetricsBatch) error {
	var es, ts, types, values, lines []string
	var seqs []int32
	for _, bt := range batches {
		if err := checkName("experiment", bt.Experiment); err != nil {
			return err
		}
		if err := checkName("trial", bt.Trial); err != nil {
			return err
		}
		for _, p := range bt.Points {
			line, err := json.Marshal(p)
			if err != nil {
				return fmt.Errorf("append metrics of %s/%s: %w", bt.Experiment, bt.Trial, err)
			}
			es, ts, types = append(es, bt.Experiment), append(ts, bt.Trial), append(types, p.Type)
			values, lines = append(values, string(p.Value)), append(lines, string(line))
			seqs = append(seqs, int32(p.Sequence))
		}
	}
	if len(es) == 0 {
		return nil
	}
	if err := b.checkMetrics(batches); err != nil {
		return err
	}
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return err
	}
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO `+b.t("metrics")+` (experiment, trial, type, seq, value, point)
		SELECT e, t, ty, s, v, p FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[]) WITH ORDINALITY AS u(e, t, ty, s, v, p, n)
		ORDER BY n ON CONFLICT DO NOTHING`, es, ts, types, seqs, values, lines)
	batch.Queue(`SELECT pg_notify($1, 'metrics')`, b.channel)
	tx, err := pool.Begin(ctx)
	if err != nil {
		return b.fail("append metric points", err)
	}
	defer tx.Rollback(ctx)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return b.fail("append metric points", err)
	}
	return b.fail("append metric points", tx.Commit(ctx))
}

// ReadMetricsFile returns a series as JSON lines of MetricPoint, in the
// order appended; nil when there is none.
func (b *Backend) ReadMetricsFile(experiment, trial string) ([]byte, error) {
	if err := checkName("experiment", experiment); err != nil {
		return nil, err
	}
	if err := checkName("trial", trial); err != nil {
		return nil, err
	}
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT point FROM `+b.t("metrics")+` WHERE experiment = $1 AND trial = $2 ORDER BY id`, experiment, trial)
	if err != nil {
		return nil, b.fail("read metric points", err)
	}
	var out []byte
	for rows.Next() {
		var p []byte
		if err := rows.Scan(&p); err != nil {
			return nil, b.fail("read metric points", err)
		}
		out = append(append(out, p...), '\n')
	}
	return out, b.fail("read metric points", rows.Err())
}

// ReadMetrics returns a series in the order appended; nil when there is
// none.
func (b *Backend) ReadMetrics(experiment, trial string) ([]state.MetricPoint, error) {
	data, err := b.ReadMetricsFile(experiment, trial)
	if err != nil || data == nil {
		return nil, err
	}
	var pts []state.MetricPoint
	for i, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var p state.MetricPoint
		if err := json.Unmarshal(l, &p); err != nil {
			return pts, fmt.Errorf(`backend "pg" (%s): point %d of the series of %s/%s in table %s.metrics: %v`, b.where, i+1, experiment, trial, b.schema, err)
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// RemoveMetrics removes an experiment's series.
func (b *Backend) RemoveMetrics(experiment string) error {
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `DELETE FROM `+b.t("metrics")+` WHERE experiment = $1`, experiment)
	return b.fail("remove metric series", err)
}

// MoveMetrics renames an experiment's series, refusing to merge them into
// another's.
func (b *Backend) MoveMetrics(from, to string) error {
	if from == to {
		return nil
	}
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return b.fail("move metric series", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, key("metrics-move", b.schema)); err != nil {
		return b.fail("move metric series", err)
	}
	var there, here bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+b.t("metrics")+` WHERE experiment = $1), EXISTS (SELECT 1 FROM `+b.t("metrics")+` WHERE experiment = $2)`, to, from).Scan(&there, &here); err != nil {
		return b.fail("move metric series", err)
	}
	if !here {
		return nil
	}
	if there {
		return fmt.Errorf(`backend "pg" (%s): cannot move the metric series of experiment %q to %q: %q has series of its own in table %s.metrics; remove them first`, b.where, from, to, to, b.schema)
	}
	if _, err := tx.Exec(ctx, `UPDATE `+b.t("metrics")+` SET experiment = $2 WHERE experiment = $1`, from, to); err != nil {
		return b.fail("move metric series", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, 'metrics')`, b.channel); err != nil {
		return b.fail("move metric series", err)
	}
	return b.fail("move metric series", tx.Commit(ctx))
}

// MetricsStamp changes whenever a trial's series does: its count and last
// id ("" when there is none).
func (b *Backend) MetricsStamp(experiment, trial string) (string, error) {
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return "", err
	}
	var n, last int64
	if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(max(id), 0) FROM `+b.t("metrics")+` WHERE experiment = $1 AND trial = $2`, experiment, trial).Scan(&n, &last); err != nil {
		return "", b.fail("read a series' stamp", err)
	}
	if n == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d:%d", n, last), nil
}

// MarkRefreshed records when experiments were refreshed (lineage's).
func (b *Backend) MarkRefreshed(lineage string, experiments []string, t time.Time) error {
	if len(experiments) == 0 {
		return nil
	}
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return err
	}
	batch := &pgx.Batch{}
	batch.Queue(`DELETE FROM `+b.t("refreshed")+` WHERE lineage <> $1`, lineage)
	batch.Queue(`INSERT INTO `+b.t("refreshed")+` (lineage, experiment, at) SELECT $1, e, $3 FROM unnest($2::text[]) AS e
		ON CONFLICT (lineage, experiment) DO UPDATE SET at = excluded.at, version = nextval(pg_get_serial_sequence('`+b.schema+`.refreshed', 'version'))`,
		lineage, experiments, t)
	batch.Queue(`SELECT pg_notify($1, 'refreshed')`, b.channel)
	tx, err := pool.Begin(ctx)
	if err != nil {
		return b.fail("mark experiments refreshed", err)
	}
	defer tx.Rollback(ctx)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return b.fail("mark experiments refreshed", err)
	}
	return b.fail("mark experiments refreshed", tx.Commit(ctx))
}

// RefreshedAt returns the marks of lineage; none when they cannot be read
// (marks are advisory).
func (b *Backend) RefreshedAt(lineage string) map[string]time.Time {
	out := map[string]time.Time{}
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return out
	}
	rows, err := pool.Query(ctx, `SELECT experiment, at FROM `+b.t("refreshed")+` WHERE lineage = $1`, lineage)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var e string
		var at time.Time
		if rows.Scan(&e, &at) == nil {
			out[e] = at.UTC()
		}
	}
	return out
}

// Lost returns what a state that is gone left: trials' and experiments'
// rows, metric series; nil when there is a state row, or nothing.
func (b *Backend) Lost() (*state.LostState, error) {
	ctx, cancel := background()
	defer cancel()
	pool, err := b.getPool(ctx)
	if err != nil {
		return nil, err
	}
	var has bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+b.t("state")+`)`).Scan(&has); err != nil {
		return nil, b.fail("look for a lost state", err)
	}
	if has {
		return nil, nil
	}
	ls := &state.LostState{
		Where:  fmt.Sprintf("in the pg backend (%s: table %s.state has no row)", b.where, b.schema),
		Afresh: fmt.Sprintf("delete the rows of tables %[1]s.experiments, %[1]s.trials and %[1]s.metrics (or use another schema_name)", b.schema),
	}
	for _, q := range []struct{ what, sql string }{
		{"rows in " + b.schema + ".experiments", `SELECT DISTINCT name FROM ` + b.t("experiments")},
		{"rows in " + b.schema + ".trials", `SELECT DISTINCT experiment FROM ` + b.t("trials")},
		{"metric series in " + b.schema + ".metrics", `SELECT DISTINCT experiment FROM ` + b.t("metrics")},
	} {
		rows, err := pool.Query(ctx, q.sql)
		if err != nil {
			return nil, b.fail("look for a lost state", err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, b.fail("look for a lost state", err)
		}
		ls.AddTraces(q.what, names)
	}
	if len(ls.Traces) == 0 {
		return nil, nil
	}
	return ls, nil
}

// Changes receives a value after each change committed by any client
// (NOTIFY), until ctx is done. A connection lost is made again, and a
// value sent then (a change may have been missed meanwhile).
func (b *Backend) Changes(ctx context.Context) (<-chan struct{}, error) {
	conn, err := b.listen(ctx)
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	send := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(ch)
		wait := 200 * time.Millisecond
		for {
			if conn == nil {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				wait = min(wait*2, 10*time.Second)
				if conn, _ = b.listen(ctx); conn == nil {
					continue
				}
				wait = 200 * time.Millisecond
				send()
			}
			_, err := conn.WaitForNotification(ctx)
			if err == nil {
				send()
				continue
			}
			conn.Close(context.Background())
			conn = nil
			if ctx.Err() != nil {
				return
			}
		}
	}()
	return ch, nil
}

func (b *Backend) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := b.connect(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{b.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, b.fail("listen for changes", err)
	}
	return conn, nil
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
