"""Replay `switchyard eval --turns-out` records through a Python copy of
shared/core/src/conversation (`contextualize`, no topics, 30 s between turns, as `eval`
replays them), to try variants of the session filter in seconds instead of an 8-minute
`eval`. It first checks that it makes Switchyard's own choice on every turn.

    switchyard --templates templates/sgd eval --dataset ../shared/data/sgd/dev.jsonl \
        --turns-out turns.jsonl
    python3 infra/research/replay_session.py turns.jsonl

A research copy: when the Rust filter changes, "agree with the records" says whether this
copy still follows it. Variants: `decoding` (marginal | best_path, as the setting) and
`twins`/`twin_mode`/`twin_strength` (the near-duplicate tying measured on 2026-12-06).
Needs PyYAML (the project virtualenv has it)."""
import json, sys, glob, re, os
from collections import defaultdict, Counter

import yaml

# The filter's settings are the embedded defaults' (`sessions.context`), so the copy follows
# them; the variants below are this script's own.
CONFIG = "shared/catalog/src/config.yaml"
VARIANTS = dict(twins={}, twin_mode=None, twin_strength=1.0)


def defaults(path=CONFIG):
    with open(path) as f:
        context = yaml.safe_load(f)["sessions"]["context"]
    return {**context, **VARIANTS}


def load_actions(verbs, root="templates/sgd"):
    actions = {}
    for f in glob.glob(f"{root}/*/templates.yaml"):
        ds = yaml.safe_load(open(f.replace("templates.yaml", "datasource.yaml")))["name"]
        for t in yaml.safe_load(open(f))["templates"]:
            first = next((w for w in re.split(r"[^0-9A-Za-z]+", t["description"]) if w), "").lower()
            actions[(ds, t["id"])] = first in verbs
    return actions


def key(c):
    return (c["datasource"], c["template_id"])


def prob(c):
    return max(c["probability"], 0.0)


def holds_cue(text, cues):
    low = text.lower()
    return any(c in low for c in cues)


def accepts(q, cues):
    low = q.lstrip().lower()
    for c in cues:
        if low.startswith(c):
            rest = low[len(c):]
            if not rest or not rest[0].isalnum():
                return True
    return False


def informativeness(cfg, conf, thr):
    low = thr - cfg["uninformative_below_threshold"]
    return (conf - low) / (cfg["uninformative_below_threshold"] + cfg["informative_above_threshold"])


def best(matches):
    return matches[0] if matches and not matches[0]["declined"] else None


def load(path):
    sessions = defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        sessions[r["session_id"]].append(r)
    for s in sessions.values():
        s.sort(key=lambda r: r["position"])
    return sessions


def step(cfg, actions, r, turns):
    """One turn: returns (final matches list, outcome, choices, belief)."""
    own = r["own"]
    joint = r.get("joint")
    alone = r.get("assistant_alone")
    with_turn = r.get("with_assistant")
    ob = best(own)
    conf = ob["confidence"] if ob else 0.0
    inf_raw = informativeness(cfg, conf, r["threshold"])
    informative = min(max(inf_raw, 0.0), 1.0)
    w = cfg["previous_question_weight"] * (1 - informative) if joint is not None else 0.0
    opened = lambda ms: [m for m in (ms or []) if not m["declined"]]
    own_o, joint_o, wt_o, al_o = opened(own), opened(joint), opened(with_turn) if with_turn is not None else None, opened(alone)
    p = lambda ms, k: next((prob(m) for m in ms if key(m) == k), 0.0)
    order = []
    for m in own_o + joint_o + (wt_o or []) + al_o:
        if key(m) not in order:
            order.append(key(m))
    evidence = [dict(k=k, p=(1 - w) * p(own_o, k) + w * p(joint_o, k),
                     said=p(wt_o, k) if wt_o is not None else None,
                     offered=p(al_o, k), action=actions.get(k, False)) for k in order]
    twin_temper(cfg, evidence, turns)
    offers = alone is not None and holds_cue(r.get("assistant") or "", cfg["offer_cues"])
    acc = accepts(r["text"], cfg["acceptance_cues"])
    offer_weight = cfg["offer_weight"] if offers and acc else 0.0
    previous = turns[-1] if turns else None
    weight = 0.5 ** (30 / cfg["half_life_seconds"]) if previous else 0.0
    preferred = preferred_ds(turns, cfg["preference_uses"])
    prior = prior_belief(previous) if previous else []
    power = cfg["evidence_power"] * min(max(inf_raw, 0.05), 1.0)
    belief = follow(cfg, prior, weight, preferred, offer_weight, evidence, power)
    kept = belief[: cfg["belief_size"]]
    matches = [dict(m) for m in own]
    outcome, choices = r["own_outcome"], [key(m) for m in own[: r["own_choices"]]] if r["own_outcome"] == "clarify" else []
    if previous is None and alone is None:
        return matches, outcome, choices, kept
    if previous is not None and previous["outcome"] == "clarify":
        pick = pick_choice(r["text"], previous["choices"], own)
        if pick is not None:
            move_first(matches, [joint, with_turn, alone], pick)
            return matches, "execute", [], kept
    if belief:
        top_k, top_p = belief[0]
        selected = outcome in ("execute", "clarify")
        agrees = selected and matches and key(matches[0]) == top_k and outcome == "execute"
        if not agrees:
            if top_p >= cfg["min_probability"]:
                if move_first(matches, [joint, with_turn, alone], top_k):
                    return matches, "execute", [], kept
            elif not (best(own) and key(best(own)) == top_k):
                declined = next((m["declined"] for ms in [own, joint, with_turn, alone] if ms for m in ms if key(m) == top_k), False)
                if not declined:
                    had_best = best(own) is not None
                    if move_first(matches, [joint, with_turn, alone], top_k):
                        if had_best and len(matches) > 1 and not matches[1]["declined"]:
                            return matches, "clarify", [key(matches[0]), key(matches[1])], kept
                        return matches, "execute", [], kept
    return matches, outcome, choices, kept


def twin_temper(cfg, evidence, turns):
    """Variant hook: temper the evidence between twin templates (cfg['twins'] maps a template
    to its group id)."""
    twins = cfg["twins"]
    if not twins or cfg["twin_mode"] is None:
        return
    if cfg["twin_mode"] == "continuing" and not turns:
        return
    groups = defaultdict(list)
    for e in evidence:
        g = twins.get(e["k"])
        if g is not None:
            groups[g].append(e)
    a = cfg["twin_strength"]
    for g, es in groups.items():
        if len(es) < 2:
            continue
        for field in ("p", "said"):
            vals = [e[field] for e in es if e[field] is not None]
            if not vals:
                continue
            top = max(vals)
            for e in es:
                if e[field] is not None:
                    e[field] = (1 - a) * e[field] + a * top


def move_first(matches, others, k):
    i = next((i for i, m in enumerate(matches) if key(m) == k), None)
    if i is None:
        found = next((m for o in others if o for m in o if key(m) == k), None)
        if found is None:
            return False
        matches.append(dict(found))
        i = len(matches) - 1
    m = matches.pop(i)
    matches.insert(0, m)
    return True


def pick_choice(query, choices, own):
    if not choices:
        return None
    words = [w.lower() for w in re.split(r"[^0-9A-Za-z]+", query) if w]
    short = len(words) <= 6
    ordinal = None
    for w in words:
        o = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "last": len(choices) - 1}.get(w)
        if o is None and w in ("1", "2", "3") and short:
            o = int(w) - 1
        if o is not None:
            ordinal = o
            break
    if ordinal is not None and ordinal < len(choices):
        return choices[ordinal]
    first_choice = next((m for m in own if key(m) in choices), None)
    if first_choice is None:
        return None
    b = best(own)
    leads = b is not None and key(b) in choices
    return key(first_choice) if (leads or short) else None


def follow(cfg, previous, weight, preferred, offer_weight, evidence, power):
    n = max(len(evidence), 1)
    kept = min(sum(p for _, p in previous), 1.0)
    actions = {e["k"]: e["action"] for e in evidence}
    post = []
    for e in evidence:
        to = e["k"]
        moved = 0.0
        terms = []
        for (bk, bp) in previous:
            if bk == to:
                s = cfg["stay"]
            elif bk[0] == to[0]:
                s = cfg["lookup_to_action"] if (not actions.get(bk, False) and e["action"]) else cfg["same_datasource"]
            else:
                s = cfg["other_datasource"]
            terms.append(bp * s)
        moved = (max(terms) if terms else 0.0) if cfg["decoding"] == "best_path" else sum(terms)
        moved += (1 - kept) / n
        prior = weight * moved + (1 - weight) / n
        if offer_weight > 0:
            prior = (1 - offer_weight) * prior + offer_weight * e["offered"]
        if preferred == to[0]:
            prior *= cfg["preference_weight"]
        lik = (max(e["p"], 0) + cfg["evidence_floor"]) ** power
        if e["said"] is not None:
            lik *= (max(e["said"], 0) + cfg["evidence_floor"]) ** cfg["assistant_power"]
        post.append((to, prior * lik))
    total = sum(p for _, p in post)
    if total > 0:
        post = [(k, p / total) for k, p in post]
    post.sort(key=lambda x: -x[1])
    return post


def prior_belief(turn):
    if not turn["belief"]:
        return [(turn["template"], 1.0)] if turn["template"] else []
    return turn["belief"]


def preferred_ds(turns, uses):
    c = Counter(t["template"][0] for t in turns if t["template"] and t["outcome"] == "execute")
    c = [(d, n) for d, n in c.items() if n >= uses]
    if not c:
        return None
    return sorted(c, key=lambda x: (-x[1], x[0]))[0][0]


def replay(sessions, cfg, actions):
    out = []
    for sid, recs in sessions.items():
        turns = []
        for r in recs:
            matches, outcome, choices, kept = step(cfg, actions, r, turns)
            b = best(matches)
            chosen = key(b) if b else None
            right = chosen is not None and chosen[1] == r["intent"] and (r["domain"] is None or r["domain"] == chosen[0])
            out.append(dict(sid=sid, kind=r["kind"], right=right, chosen=chosen, rec=r))
            sel = outcome in ("execute", "clarify")
            tmpl = key(matches[0]) if matches and (sel or not matches[0]["declined"]) else None
            turns.append(dict(template=tmpl, outcome=outcome, choices=choices, belief=kept))
    return out


def fold(sid):
    return sum(ord(ch) for ch in sid) % 5


def summary(out):
    def acc(rows):
        return 100 * sum(r["right"] for r in rows) / max(len(rows), 1)
    s = dict(all=acc(out))
    for k in ("first", "continuing", "switching"):
        s[k] = acc([r for r in out if r["kind"] == k])
    s["folds"] = [round(acc([r for r in out if fold(r["sid"]) == f]), 2) for f in range(5)]
    return s


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    cfg = defaults()
    actions = load_actions(cfg["action_verbs"])
    sessions = load(sys.argv[1])
    out = replay(sessions, cfg, actions)
    agree = sum((o["chosen"] == (tuple(o["rec"]["chosen"].values()) if o["rec"]["chosen"] else None)) for o in out)
    print("agree with records", agree, "/", len(out))
    print(summary(out))
    rec_right = 100 * sum(o["rec"]["right"] for o in out) / len(out)
    print("records right", rec_right)
    print("best_path", summary(replay(sessions, dict(cfg, decoding="best_path"), actions)))
