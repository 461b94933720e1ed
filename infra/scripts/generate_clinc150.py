#!/usr/bin/env python3
"""Generate Switchyard intent catalogs from the CLINC150 training split.

Each CLINC150 domain becomes one datasource folder (kind ``intent``) and each
intent becomes one template whose ``nl_examples`` are the first K utterances of
that intent in ``train.jsonl`` file order.  The output is deterministic: domains
and intents follow ``domains.json`` order, and YAML is written by hand with
JSON-style double-quoted strings (valid YAML) so no third-party library is needed.

Usage (from anywhere; relative paths are resolved against the repository root):

    python3 infra/scripts/generate_clinc150.py                      # K=10 -> templates/clinc150
    python3 infra/scripts/generate_clinc150.py --examples 5 --out templates/clinc150-5

Data: CLINC150 (Larson et al., EMNLP 2019), github.com/clinc/oos-eval, CC BY 3.0.
"""

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA_DIR = "../shared/data/clinc150"

DOMAIN_DESCRIPTIONS = {
    "banking": "Everyday banking: balances, transfers, bills, account holds and fraud reports.",
    "credit_cards": "Credit and debit cards: limits, rewards, APR, applications, lost or damaged cards.",
    "kitchen_and_dining": "Cooking and eating out: recipes, nutrition, food storage and restaurant reservations.",
    "home": "Home assistant tasks: music, calendar, reminders, to-do and shopping lists, orders and smart devices.",
    "auto_and_commute": "Cars and getting around: maintenance, fuel, tires, traffic, directions and ride hailing.",
    "travel": "Trip planning and travel help: flights, hotels, rental cars, visas, currency and translation.",
    "utility": "Quick utilities: weather, time and date, alarms, timers, calls, texts, math and word lookups.",
    "work": "Workplace and payroll questions: paid time off, pay, taxes, benefits, 401k and meetings.",
    "small_talk": "Casual conversation with the assistant: greetings, thanks, jokes and questions about itself.",
    "meta": "Controlling the assistant itself: yes/no/cancel replies, voice, volume, language, names and settings.",
}

INTENT_DESCRIPTIONS = {
    # banking
    "freeze_account": "Freeze or block a bank account right away",
    "routing": "Look up the routing number of a bank account",
    "pin_change": "Change or reset the PIN of a bank account or card",
    "bill_due": "Find out when a bill is due",
    "pay_bill": "Pay a bill from a bank account",
    "account_blocked": "Ask why a bank account is blocked or has a hold on it",
    "interest_rate": "Check the interest rate on an account",
    "min_payment": "Find the minimum payment owed on a bill or loan",
    "bill_balance": "Check how much is owed on a utility or other bill",
    "transfer": "Transfer money between accounts",
    "order_checks": "Order a new checkbook or more paper checks",
    "balance": "Check the balance of a checking or savings account",
    "spending_history": "See how much was spent on a category or at a merchant over a period",
    "transactions": "List recent transactions or charges on an account",
    "report_fraud": "Report a fraudulent or suspicious charge",
    # credit_cards
    "replacement_card_duration": "Ask how long a replacement card takes to arrive",
    "expiration_date": "Find when a card expires",
    "damaged_card": "Report a damaged or broken card",
    "improve_credit_score": "Get advice on improving a credit score",
    "report_lost_card": "Report a lost or stolen card",
    "card_declined": "Ask why a card was declined",
    "credit_limit_change": "Request a higher or different credit limit",
    "apr": "Check the APR on a credit card",
    "redeem_rewards": "Redeem or cash in credit card reward points",
    "credit_limit": "Check the current credit limit on a card",
    "rewards_balance": "Check how many reward points a card has earned",
    "application_status": "Check the status of a credit card application",
    "credit_score": "Look up a credit score",
    "new_card": "Apply for a new credit card",
    "international_fees": "Ask whether a card charges foreign transaction fees",
    # kitchen_and_dining
    "food_last": "Ask how long a food stays fresh before it goes bad",
    "confirm_reservation": "Confirm an existing restaurant reservation",
    "how_busy": "Ask how busy a restaurant is or how long the wait is",
    "ingredients_list": "List the ingredients needed for a dish",
    "calories": "Ask how many calories a food has",
    "nutrition_info": "Get nutrition facts or healthiness of a food",
    "recipe": "Find a recipe or how to cook a dish",
    "restaurant_reviews": "Check reviews and ratings of a restaurant",
    "restaurant_reservation": "Book a table at a restaurant",
    "meal_suggestion": "Suggest a meal or dish to cook or eat",
    "restaurant_suggestion": "Recommend a restaurant to eat at",
    "cancel_reservation": "Cancel a restaurant reservation",
    "ingredient_substitution": "Find a substitute for a cooking ingredient",
    "cook_time": "Ask how long a dish takes to cook",
    "accept_reservations": "Ask whether a restaurant takes reservations",
    # home
    "what_song": "Identify the song that is currently playing",
    "play_music": "Play music by an artist, genre or song",
    "todo_list_update": "Add or remove a task on the to-do list",
    "reminder": "Read back the current reminders",
    "reminder_update": "Create or change a reminder",
    "calendar_update": "Add, change or remove a calendar event",
    "order_status": "Track a package or the status of an order",
    "update_playlist": "Add a song to a playlist",
    "shopping_list": "Read what is on the shopping list",
    "calendar": "Check what is on the calendar for a day",
    "next_song": "Skip to the next song",
    "order": "Order or reorder a product online",
    "todo_list": "Read what is on the to-do list",
    "shopping_list_update": "Add or remove items on the shopping list",
    "smart_home": "Control smart home devices like lights, thermostat or appliances",
    # auto_and_commute
    "current_location": "Find out where I am right now",
    "oil_change_when": "Ask when the car is due for an oil change",
    "oil_change_how": "Learn how to change the oil in a car",
    "uber": "Book an Uber or other ride",
    "traffic": "Check the traffic on a route",
    "tire_pressure": "Check the air pressure of the car's tires",
    "schedule_maintenance": "Schedule car maintenance or a service appointment",
    "gas": "Check how much fuel is left in the tank",
    "mpg": "Ask about the car's fuel economy in miles per gallon",
    "distance": "Ask how far away a place is or how long it takes to get there",
    "directions": "Get directions to a place",
    "last_maintenance": "Find when the car last had maintenance",
    "gas_type": "Ask what type of fuel the car needs",
    "tire_change": "Ask when the tires need to be replaced",
    "jump_start": "Get help jump starting a car with a dead battery",
    # travel
    "plug_type": "Ask what power plug or adapter is used in a country",
    "travel_notification": "Notify the bank of upcoming travel dates and destination",
    "translate": "Translate a phrase into another language",
    "flight_status": "Check the status of a flight",
    "international_visa": "Ask whether a visa is needed to visit a country",
    "timezone": "Ask what time zone a place is in",
    "exchange_rate": "Get the exchange rate between two currencies",
    "travel_suggestion": "Get sightseeing and activity suggestions for a destination",
    "travel_alert": "Check travel alerts or advisories for a country",
    "vaccines": "Ask which vaccines are needed before traveling somewhere",
    "lost_luggage": "Report or find lost luggage",
    "book_flight": "Search for or book a flight",
    "book_hotel": "Find or book a hotel room",
    "carry_on": "Ask about carry-on baggage rules for a flight",
    "car_rental": "Rent a car",
    # utility
    "weather": "Get the weather forecast",
    "alarm": "Set an alarm",
    "date": "Ask for today's date",
    "find_phone": "Help locate a lost phone",
    "share_location": "Share my current location with someone",
    "timer": "Set a timer",
    "make_call": "Place a phone call",
    "calculator": "Do a math calculation",
    "definition": "Get the definition of a word",
    "measurement_conversion": "Convert between units of measurement",
    "flip_coin": "Flip a coin",
    "spelling": "Spell a word",
    "time": "Ask for the current time somewhere",
    "roll_dice": "Roll dice",
    "text": "Send a text message to someone",
    # work
    "pto_request_status": "Check the status of a time-off request",
    "next_holiday": "Find the next company holiday",
    "insurance_change": "Change or start a new insurance plan",
    "insurance": "Ask what insurance or health benefits are available",
    "meeting_schedule": "Check when a meeting is scheduled",
    "payday": "Ask when the next paycheck arrives",
    "taxes": "Ask about taxes owed",
    "income": "Ask about salary or income",
    "rollover_401k": "Roll over or transfer a 401k",
    "pto_balance": "Check how many vacation days are left",
    "pto_request": "Request paid time off",
    "w2": "Find the W-2 tax form",
    "schedule_meeting": "Schedule a meeting or book a meeting room",
    "direct_deposit": "Set up direct deposit",
    "pto_used": "Check how many vacation days have been used",
    # small_talk
    "who_made_you": "Ask who created the assistant",
    "meaning_of_life": "Ask about the meaning of life",
    "who_do_you_work_for": "Ask who the assistant works for",
    "do_you_have_pets": "Ask whether the assistant has pets",
    "what_are_your_hobbies": "Ask about the assistant's hobbies",
    "fun_fact": "Hear a fun fact",
    "what_is_your_name": "Ask the assistant's name",
    "where_are_you_from": "Ask where the assistant is from",
    "goodbye": "Say goodbye",
    "thank_you": "Thank the assistant",
    "greeting": "Say hello or ask how things are going",
    "tell_joke": "Hear a joke",
    "are_you_a_bot": "Ask whether the assistant is a bot or a person",
    "how_old_are_you": "Ask the assistant's age",
    "what_can_i_ask_you": "Ask what the assistant can help with",
    # meta
    "change_speed": "Make the assistant speak faster or slower",
    "user_name": "Ask what name the assistant calls me",
    "whisper_mode": "Turn whisper mode on or off",
    "yes": "Answer yes or confirm",
    "change_volume": "Change the assistant's volume",
    "no": "Answer no or deny",
    "change_language": "Change the assistant's language",
    "repeat": "Ask the assistant to repeat what it said",
    "change_accent": "Change the assistant's accent",
    "cancel": "Cancel or stop the current request",
    "sync_device": "Pair or sync the assistant with a phone or device",
    "change_user_name": "Change the name the assistant calls me",
    "change_ai_name": "Give the assistant a new name",
    "reset_settings": "Reset the assistant to its default settings",
    "maybe": "Answer maybe or that I'm not sure",
}


def resolve(path_str: str) -> Path:
    """Resolve a path; relative paths are taken relative to the repository root."""
    p = Path(path_str)
    return p if p.is_absolute() else (REPO_ROOT / p)


def yaml_str(s: str) -> str:
    """Quote a string as a YAML double-quoted scalar (JSON-compatible escapes).

    Printable characters are kept as-is (UTF-8); backslash, double quote and any
    character YAML does not allow unescaped are escaped.
    """
    out = ['"']
    for ch in s:
        cp = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif 0x20 <= cp <= 0x7E or (0xA0 <= cp <= 0xD7FF) or (0xE000 <= cp <= 0xFFFD and cp != 0xFEFF) \
                or (0x10000 <= cp <= 0x10FFFF):
            out.append(ch)
        elif cp <= 0xFFFF:
            out.append("\\u%04x" % cp)
        else:
            out.append("\\U%08x" % cp)
    out.append('"')
    return "".join(out)


def load_examples(train_path: Path):
    examples = {}
    with train_path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{train_path}:{lineno}: invalid JSON: {e}")
            examples.setdefault(row["intent"], []).append(row["text"])
    return examples


def render_datasource(domain: str, negatives) -> str:
    text = (
        "# Generated by infra/scripts/generate_clinc150.py -- do not edit by hand.\n"
        f"name: {yaml_str(domain)}\n"
        "kind: intent\n"
        f"description: {yaml_str(DOMAIN_DESCRIPTIONS[domain])}\n"
    )
    if negatives:
        text += "# CLINC150 out-of-scope training utterances: no datasource answers them.\n"
        text += "negative_examples:\n" + "".join(f"  - {yaml_str(n)}\n" for n in negatives)
    return text


def render_templates(domain: str, intents, examples, k: int) -> str:
    lines = [
        "# Generated by infra/scripts/generate_clinc150.py -- do not edit by hand.",
        f"# CLINC150 domain {domain!s}: first {k} training utterances per intent.",
        "templates:",
    ]
    for intent in intents:
        utts = examples.get(intent, [])[:k]
        if not utts:
            sys.exit(f"intent {intent!r} has no training utterances")
        lines.append(f"  - id: {yaml_str(intent)}")
        lines.append('    version: "1.0.0"')
        lines.append(f"    description: {yaml_str(INTENT_DESCRIPTIONS[intent])}")
        lines.append("    nl_examples:")
        for u in utts:
            lines.append(f"      - {yaml_str(u)}")
        lines.append(f"    tags: [{yaml_str(domain)}]")
    return "\n".join(lines) + "\n"


def render_readme(k: int, negatives: int, out_rel: str, domains) -> str:
    n_intents = sum(len(v) for v in domains.values())
    cmd = "python3 infra/scripts/generate_clinc150.py"
    if k != 10:
        cmd += f" --examples {k}"
    if negatives:
        cmd += f" --negatives {negatives}"
    if out_rel != "templates/clinc150":
        cmd += f" --out {out_rel}"
    domain_list = "\n".join(f"- `{d}/` ({len(v)} intents)" for d, v in domains.items())
    return f"""# CLINC150 intent catalog (K = {k})

A Switchyard template catalog generated from the CLINC150 intent-classification data set.
Each of the {len(domains)} CLINC150 domains is one datasource folder (`kind: intent`, no query body),
and each of the {n_intents} intents is one template whose `nl_examples` are the first {k}
utterances of that intent in the training split, in file order. Out-of-scope (`oos`) queries
are not turned into templates{f"; the first {negatives} are every datasource's `negative_examples`" if negatives else ""}.

{domain_list}

## Source and licence

The utterances and intent labels come from CLINC150:

> Stefan Larson, Anish Mahendran, Joseph J. Peper, Christopher Clarke, Andrew Lee, Parker Hill,
> Jonathan K. Kummerfeld, Kevin Leach, Michael A. Laurenzano, Lingjia Tang, Jason Mars.
> "An Evaluation Dataset for Intent Classification and Out-of-Scope Prediction". EMNLP 2019.
> <https://github.com/clinc/oos-eval> (`data/data_full.json`)

CLINC150 is licensed under the Creative Commons Attribution 3.0 Unported licence
(CC BY 3.0, <https://creativecommons.org/licenses/by/3.0/>). The texts are used unchanged;
the template and datasource descriptions were written by the Switchyard team.

## How it was generated

From the repository root:

```sh
{cmd}
```

The script (Python 3 standard library only) reads `../shared/data/clinc150/train.jsonl` and
`domains.json` by default; see `--help`. Output is deterministic: domains and intents follow
`domains.json` order. Do not edit these files by hand; re-run the script instead.

Only the training split was used to build this catalog. The validation split is meant for
measuring routing accuracy, and the CLINC150 test split is deliberately not included in this
repository.
"""


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Generate Switchyard intent catalogs from CLINC150. "
        "Relative paths are resolved against the repository root (%s)." % REPO_ROOT
    )
    ap.add_argument("--train", default=f"{DEFAULT_DATA_DIR}/train.jsonl",
                    help="CLINC150 train.jsonl (default: %(default)s)")
    ap.add_argument("--domains", default=f"{DEFAULT_DATA_DIR}/domains.json",
                    help="domains.json mapping domain -> intents (default: %(default)s)")
    ap.add_argument("--examples", type=int, default=10, metavar="K",
                    help="number of nl_examples per intent (default: %(default)s)")
    ap.add_argument("--negatives", type=int, default=0, metavar="N",
                    help="give every datasource the first N out-of-scope training "
                    "utterances as negative_examples (default: %(default)s)")
    ap.add_argument("--out", default="templates/clinc150",
                    help="output catalog directory (default: %(default)s)")
    args = ap.parse_args(argv)

    if args.examples < 1:
        ap.error("--examples must be at least 1")
    if args.negatives < 0:
        ap.error("--negatives must not be negative")

    train_path = resolve(args.train)
    domains_path = resolve(args.domains)
    out_dir = resolve(args.out)

    with domains_path.open(encoding="utf-8") as f:
        domains = json.load(f)
    examples = load_examples(train_path)
    negatives = examples.get("oos", [])[: args.negatives]

    missing = [i for v in domains.values() for i in v if i not in INTENT_DESCRIPTIONS]
    missing += [d for d in domains if d not in DOMAIN_DESCRIPTIONS]
    if missing:
        sys.exit(f"no hand-written description for: {', '.join(missing)}")

    out_dir.mkdir(parents=True, exist_ok=True)
    for domain, intents in domains.items():
        ds_dir = out_dir / domain
        ds_dir.mkdir(parents=True, exist_ok=True)
        (ds_dir / "datasource.yaml").write_text(render_datasource(domain, negatives), encoding="utf-8")
        (ds_dir / "templates.yaml").write_text(
            render_templates(domain, intents, examples, args.examples), encoding="utf-8")

    try:
        out_rel = out_dir.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        out_rel = str(out_dir)
    (out_dir / "README.md").write_text(render_readme(args.examples, len(negatives), out_rel, domains), encoding="utf-8")

    n = sum(len(v) for v in domains.values())
    print(f"wrote {len(domains)} datasources, {n} templates (K={args.examples}) to {out_dir}")


if __name__ == "__main__":
    main()
