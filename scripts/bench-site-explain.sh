#!/usr/bin/env bash
# The plan of each query of ladder/store/src/site.rs on a database seeded by
# `ladder bench-site seed` (docs/perf/site.md), with the values the load uses:
# the busiest bot, its rival, listing page 1,000's cursor, a deep standings page.
#
#   scripts/bench-site-explain.sh postgres://postgres@127.0.0.1:5432/site_bench
#   scripts/bench-site-explain.sh sqlite:///var/tmp/site_bench.db
#
# PostgreSQL: EXPLAIN (ANALYZE, BUFFERS), each query run twice (the second plan
# is printed, warm). SQLite: EXPLAIN QUERY PLAN, plus the time of one run.
set -euo pipefail

url=${1:?usage: $0 postgres://…|sqlite://PATH}
case $url in
postgres://*) backend=pg ;;
sqlite://*) backend=sqlite; file=${url#sqlite://}; file=${file%%\?*} ;;
*) echo "$0: not a postgres:// or sqlite:// URL: $url" >&2; exit 2 ;;
esac

scalar() {
    if [ $backend = pg ]; then psql -X -q -t -A -d "$url" -c "$1"; else sqlite3 "$file" "$1"; fi
}

season=$(scalar "SELECT id FROM seasons WHERE ended_ms IS NULL ORDER BY id DESC LIMIT 1")
ended=$(scalar "SELECT id FROM seasons WHERE ended_ms IS NOT NULL ORDER BY id DESC LIMIT 1")
bot=$(scalar "SELECT bot_a FROM matches WHERE state = 'settled' GROUP BY bot_a ORDER BY COUNT(*) DESC, bot_a LIMIT 1")
rival=$(scalar "SELECT bot_b FROM matches WHERE bot_a = '$bot' GROUP BY bot_b ORDER BY COUNT(*) DESC, bot_b LIMIT 1")
class=$(scalar "SELECT class FROM bots WHERE id = '$bot'")
cursor=$(scalar "SELECT finished_ms || ' ' || id FROM matches WHERE state = 'settled' ORDER BY finished_ms DESC, id DESC LIMIT 1 OFFSET 49949")
read -r cursor_ms cursor_id <<<"${cursor:-9223372036854775807 x}"
in_class=$(scalar "SELECT COUNT(*) FROM ratings WHERE season_id = $season AND class = '$class'")
deep_rank=$(( (in_class * 9 / 10 / 50 - 1) * 50 ))
[ $deep_rank -gt 0 ] || deep_rank=1
deep=$(scalar "SELECT (r.rating - 2.0 * r.deviation) || ' ' || b.name FROM ratings r JOIN bots b ON b.id = r.bot_id WHERE r.season_id = $season AND r.class = '$class' ORDER BY r.rating - 2.0 * r.deviation DESC, b.name LIMIT 1 OFFSET $((deep_rank - 1))")
read -r deep_cons deep_bot <<<"$deep"
match_id=$cursor_id

match_line="SELECT m.id, m.class, m.state, m.winner, m.stake_a, m.stake_b, m.version_a, m.version_b, m.accepted_ms, m.finished_ms, m.replay_path, s.name AS season_name, ba.name AS name_a, bb.name AS name_b FROM matches m JOIN bots ba ON ba.id = m.bot_a JOIN bots bb ON bb.id = m.bot_b JOIN seasons s ON s.id = m.season_id"
side() { # this other against
    echo "SELECT * FROM (SELECT id FROM matches WHERE $1 = '$bot'$3 AND state = 'settled' AND (finished_ms, id) < (9223372036854775807, '') ORDER BY finished_ms DESC, id DESC LIMIT 51) AS side_$1"
}

declare -a names queries
add() { names+=("$1"); queries+=("$2"); }
listing() { # finished_ms id limit
    echo "$match_line WHERE m.id IN (SELECT id FROM matches WHERE state = 'settled' AND (finished_ms, id) < ($1, '$2') ORDER BY finished_ms DESC, id DESC LIMIT $3) ORDER BY m.finished_ms DESC, m.id DESC LIMIT $3"
}
add "settled_matches (home, 10 latest)" "$(listing 9223372036854775807 '' 11)"
add "settled_matches (page 1,000)" "$(listing "$cursor_ms" "$cursor_id" 51)"
add "match_line" "$match_line WHERE m.id = '$match_id'"
# The match page: each side's chart point at the match and the one before it.
step() { # side
    echo "h$1.rating AS after_$1, (SELECT CASE WHEN p.season_id = m.season_id THEN p.rating END FROM rating_history p WHERE p.bot_id = m.bot_$1 AND (p.at_ms, p.match_id) < (h$1.at_ms, h$1.match_id) ORDER BY p.at_ms DESC, p.match_id DESC LIMIT 1) AS before_$1"
}
add "match_line (match page, shown rating change)" "${match_line/SELECT /SELECT s.ended_ms, $(step a), $(step b), } LEFT JOIN rating_history ha ON ha.bot_id = m.bot_a AND ha.match_id = m.id LEFT JOIN rating_history hb ON hb.bot_id = m.bot_b AND hb.match_id = m.id WHERE m.id = '$match_id'"
add "bot_matches (bot page)" "$match_line WHERE m.id IN ($(side bot_a bot_b " AND '' = ''") UNION ALL $(side bot_b bot_a " AND '' = ''")) ORDER BY m.finished_ms DESC, m.id DESC LIMIT 51"
add "bot_matches (head-to-head)" "$match_line WHERE m.id IN ($(side bot_a bot_b " AND bot_b = '$rival'") UNION ALL $(side bot_b bot_a " AND bot_a = '$rival'")) ORDER BY m.finished_ms DESC, m.id DESC LIMIT 51"
cons="r.rating - 2.0 * r.deviation"
table="SELECT b.name AS bot_name, u.name AS owner_name, r.rating, r.deviation, r.games, r.wins, r.losses, r.draws, $cons AS conservative FROM ratings r JOIN bots b ON b.id = r.bot_id JOIN users u ON u.id = b.owner_id WHERE r.season_id = $season AND r.class = '$class'"
add "class_table (running, page 1)" "$table AND $cons <= 'Infinity' AND ($cons < 'Infinity' OR b.name > '') ORDER BY $cons DESC, b.name LIMIT 51"
add "class_table (running, rank $deep_rank)" "$table AND $cons <= $deep_cons AND ($cons < $deep_cons OR b.name > '$deep_bot') ORDER BY $cons DESC, b.name LIMIT 51"
add "class_table (ended)" "SELECT st.rank, st.bot_name, st.owner_name, st.rating, st.deviation, st.conservative, st.provisional, st.games, st.wins, st.losses, st.draws, CAST(COALESCE(r.settled, 0) AS BIGINT) AS settled FROM standings st LEFT JOIN ratings r ON r.season_id = st.season_id AND r.bot_id = st.bot_id WHERE st.season_id = ${ended:-0} AND st.class = '$class' AND st.rank > $deep_rank ORDER BY st.rank LIMIT 51"
add "rating_history" "SELECT h.match_id, s.name AS season_name, h.version, h.at_ms, h.rating, h.deviation FROM rating_history h JOIN seasons s ON s.id = h.season_id WHERE h.bot_id = '$bot' ORDER BY h.at_ms DESC, h.match_id DESC LIMIT 500"
add "bot_record" "SELECT COUNT(*) AS seasons, CAST(COALESCE(SUM(settled), 0) AS BIGINT) AS settled, CAST(COALESCE(SUM(wins), 0) AS BIGINT) AS wins, CAST(COALESCE(SUM(draws), 0) AS BIGINT) AS draws, CAST(COALESCE(SUM(losses), 0) AS BIGINT) AS losses, CAST(COALESCE(SUM(settled_wins), 0) AS BIGINT) AS settled_wins, CAST(COALESCE(SUM(settled_draws), 0) AS BIGINT) AS settled_draws, CAST(COALESCE(SUM(settled_losses), 0) AS BIGINT) AS settled_losses FROM ratings WHERE bot_id = '$bot'"
add "last_frozen_rating" "SELECT se.name AS season_name, st.rating, st.deviation FROM ratings r JOIN standings st ON st.season_id = r.season_id AND st.bot_id = r.bot_id JOIN seasons se ON se.id = r.season_id WHERE r.bot_id = '$bot' ORDER BY r.season_id DESC LIMIT 1"
add "season_rating" "SELECT rating, deviation, volatility FROM ratings WHERE season_id = $season AND bot_id = '$bot'"
add "opponents" "SELECT bo.name AS bot_name, o.games, o.wins, o.draws, o.losses FROM (SELECT opponent, COUNT(*) AS games, CAST(SUM(won) AS BIGINT) AS wins, CAST(SUM(drawn) AS BIGINT) AS draws, CAST(SUM(lost) AS BIGINT) AS losses FROM (SELECT bot_b AS opponent, CASE winner WHEN 'a' THEN 1 ELSE 0 END AS won, CASE winner WHEN 'draw' THEN 1 ELSE 0 END AS drawn, CASE winner WHEN 'b' THEN 1 ELSE 0 END AS lost FROM matches WHERE bot_a = '$bot' AND state = 'settled' UNION ALL SELECT bot_a, CASE winner WHEN 'b' THEN 1 ELSE 0 END, CASE winner WHEN 'draw' THEN 1 ELSE 0 END, CASE winner WHEN 'a' THEN 1 ELSE 0 END FROM matches WHERE bot_b = '$bot' AND state = 'settled') AS sides GROUP BY opponent) AS o JOIN bots bo ON bo.id = o.opponent ORDER BY o.games DESC, bo.name LIMIT 50"
add "head_to_head_record" "SELECT bot_a, winner, rated, COUNT(*) AS n FROM (SELECT m.bot_a, m.winner, CAST(CASE WHEN EXISTS (SELECT 1 FROM rating_history h WHERE h.bot_id = '$bot' AND h.match_id = m.id) THEN 1 ELSE 0 END AS BIGINT) AS rated FROM matches m WHERE m.state = 'settled' AND ((m.bot_a = '$bot' AND m.bot_b = '$rival') OR (m.bot_a = '$rival' AND m.bot_b = '$bot'))) AS pair GROUP BY bot_a, winner, rated"

echo "# bot $bot (class $class), rival $rival, season $season, page-1000 cursor ${cursor_ms}_${cursor_id}, deep rank $deep_rank"
for i in "${!names[@]}"; do
    echo
    echo "## ${names[$i]}"
    if [ $backend = pg ]; then
        psql -X -q -d "$url" -c "EXPLAIN (ANALYZE, BUFFERS) ${queries[$i]}" >/dev/null
        psql -X -q -t -A -d "$url" -c "EXPLAIN (ANALYZE, BUFFERS) ${queries[$i]}"
    else
        sqlite3 "$file" "EXPLAIN QUERY PLAN ${queries[$i]}"
        sqlite3 -cmd ".timer on" "$file" "${queries[$i]}" | grep "^Run Time" || true
    fi
done
