"""Compare two `switchyard eval --turns-out` files of the same conversation set turn by
turn (issue 46, item 4): each run's share of turns right, the share right when a
near-duplicate template's twin counts as right, and the share the turn alone ranks first
(eval's `without_session`), and the twin-tolerant share of first turns alone; the
difference by kind of turn; and a paired bootstrap over dialogues (2,000 resamples, seed
1) giving the 95% interval of the difference, so a gap between two encoders can be told
from the spread of which dialogues happen to be in dev.

    switchyard --templates templates/sgd eval --dataset ../shared/data/sgd/dev.jsonl \
        --turns-out adapted.jsonl
    SWITCHYARD__EMBEDDING__ADAPTATION__MODE=base switchyard ... --turns-out base.jsonl
    python3 infra/research/compare_turns.py adapted.jsonl base.jsonl

The near-duplicate pairs are SGD's (the same intent under two services' names, which a
turn's text cannot tell apart); for another catalog pass none with `--no-twins`."""
import json, random, sys
from collections import Counter, defaultdict

SGD_TWINS = [("media_find_movies", "movies_find_movies"), ("lookup_song", "lookup_music"),
             ("play_song", "play_media")]
KINDS = ("first", "continuing", "switching")


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def chosen(record):
    return record["chosen"]["template_id"] if record["chosen"] else None


def measures(twins):
    def exact(r):
        return r["right"]

    def twin_tolerant(r):
        return r["right"] or twins.get(r["intent"]) == chosen(r)

    def turn_alone(r):
        # The turn routed alone: its best-ranked template, whatever the outcome.
        return bool(r["own"]) and r["own"][0]["template_id"] == r["intent"]

    return [("exact", exact), ("twin as right", twin_tolerant), ("turn alone", turn_alone)]


def bootstrap(pairs, score, resamples=2000):
    """95% interval of the difference in points, resampling whole dialogues."""
    by_dialogue = defaultdict(lambda: [0, 0])
    for a, b in pairs:
        entry = by_dialogue[a["session_id"]]
        entry[0] += score(a) - score(b)
        entry[1] += 1
    dialogues = list(by_dialogue.values())
    rng = random.Random(1)
    diffs = []
    for _ in range(resamples):
        sample = [rng.choice(dialogues) for _ in dialogues]
        diffs.append(100 * sum(d for d, _ in sample) / sum(n for _, n in sample))
    diffs.sort()
    return diffs[int(0.025 * resamples)], diffs[int(0.975 * resamples) - 1], len(dialogues)


def main(argv):
    paths = [a for a in argv if not a.startswith("--")]
    if len(paths) != 2:
        sys.exit("usage: compare_turns.py A.jsonl B.jsonl [--no-twins] (two --turns-out files)")
    twins = {} if "--no-twins" in argv else {
        x: y for a, b in SGD_TWINS for x, y in ((a, b), (b, a))}
    first, second = load(paths[0]), load(paths[1])
    if [(r["session_id"], r["position"]) for r in first] != \
            [(r["session_id"], r["position"]) for r in second]:
        sys.exit("the two files do not hold the same turns in the same order")
    pairs = list(zip(first, second))
    print(f"A = {paths[0]}, B = {paths[1]}, {len(pairs)} turns")
    firsts = [(a, b) for a, b in pairs if a["kind"] == "first"]
    scores = measures(twins)
    rows = [(name, score, pairs) for name, score in scores]
    rows.append(("first turns, twin as right", dict(scores)["twin as right"], firsts))
    for name, score, subset in rows:
        n = len(subset)
        a = sum(score(r) for r, _ in subset)
        b = sum(score(r) for _, r in subset)
        low, high, dialogues = bootstrap(subset, score)
        kinds = Counter()
        for ra, rb in subset:
            kinds[ra["kind"]] += score(ra) - score(rb)
        by_kind = ", ".join(f"{k} {kinds[k]:+d}" for k in KINDS)
        print(f"{name:26s} A {100 * a / n:.2f}  B {100 * b / n:.2f}  A-B {100 * (a - b) / n:+.2f} "
              f"({a - b:+d} turns: {by_kind}); 95% over {dialogues} dialogues "
              f"[{low:+.2f}, {high:+.2f}]")


if __name__ == "__main__":
    main(sys.argv[1:])
