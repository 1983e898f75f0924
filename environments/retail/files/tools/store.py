#!/usr/bin/env python3
"""The retail store: an SQLite database and the tools that read and change it.

Python standard library only (the sandbox image has python3 and nothing else).

    python3 -S tools/store.py init          create store.db from seed/store.json (deterministic)
    python3 -S tools/store.py dump          print the state: {table: {key: {field: value}}}
    python3 -S tools/store.py call TOOL     run one tool; JSON arguments on stdin, JSON result out

A tool exits 0 with its JSON result on stdout, or non-zero with ``error: ...`` on stderr:
exit 2 for bad arguments, exit 1 when the request cannot be carried out (not found, etc.).
The tools enforce data integrity only (an order must exist, a refund cannot exceed what was
paid); the store's *policy* (policy.md) is for the agent to follow, so a policy violation
changes the database and is caught by the graders.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
DB = Path(os.environ.get("STORE_DB", HERE / "store.db"))
SEED = HERE / "seed" / "store.json"

SCHEMA = {
    "users": (
        "user_id",
        "user_id TEXT PRIMARY KEY, first_name TEXT, last_name TEXT, email TEXT, "
        "address1 TEXT, address2 TEXT, city TEXT, state TEXT, zip TEXT",
    ),
    "payment_methods": (
        "payment_method_id",
        "payment_method_id TEXT PRIMARY KEY, user_id TEXT, kind TEXT, last4 TEXT, balance REAL",
    ),
    "products": (
        "item_id",
        "item_id TEXT PRIMARY KEY, product_id TEXT, product_name TEXT, options TEXT, "
        "price REAL, available INTEGER",
    ),
    "orders": (
        "order_id",
        "order_id TEXT PRIMARY KEY, user_id TEXT, status TEXT, items TEXT, total REAL, "
        "refunded REAL, payment_method_id TEXT, address1 TEXT, address2 TEXT, city TEXT, "
        "state TEXT, zip TEXT, cancel_reason TEXT, created_at TEXT, updated_at TEXT",
    ),
    "payments": (
        "payment_id",
        "payment_id TEXT PRIMARY KEY, order_id TEXT, user_id TEXT, kind TEXT, amount REAL, "
        "payment_method_id TEXT, created_at TEXT",
    ),
}
JSON_FIELDS = {("orders", "items")}
BOOL_FIELDS = {("products", "available")}
CANCEL_REASONS = ("no longer needed", "ordered by mistake")


class ToolError(Exception):
    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


# ----------------------------------------------------------------------------- database
def connect() -> sqlite3.Connection:
    if not DB.exists():
        raise ToolError(f"database {DB} does not exist; run 'store.py init' first")
    conn = sqlite3.connect(DB)
    conn.row_factory = sqlite3.Row
    return conn


def init() -> None:
    if DB.exists():
        DB.unlink()
    seed = json.loads(SEED.read_text())
    conn = sqlite3.connect(DB)
    with conn:
        for table, (_, columns) in SCHEMA.items():
            conn.execute(f"CREATE TABLE {table} ({columns})")
            for row in seed.get(table, []):
                row = {k: json.dumps(v) if (table, k) in JSON_FIELDS else v for k, v in row.items()}
                cols = ", ".join(row)
                marks = ", ".join("?" for _ in row)
                conn.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", list(row.values()))
    conn.close()


def record(table: str, row: sqlite3.Row) -> dict:
    out = {}
    for k in row.keys():  # noqa: SIM118 - a Row iterates over values, not keys
        v = row[k]
        if (table, k) in JSON_FIELDS and v is not None:
            v = json.loads(v)
        elif (table, k) in BOOL_FIELDS and v is not None:
            v = bool(v)
        out[k] = v
    return out


def dump() -> dict:
    conn = connect()
    state = {}
    for table, (key, _) in SCHEMA.items():
        rows = conn.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall()
        state[table] = {}
        for row in rows:
            rec = record(table, row)
            state[table][rec.pop(key)] = rec
    return state


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ----------------------------------------------------------------------------- arguments
def need(args: dict, name: str, kind: type | tuple = str):
    if name not in args:
        raise ToolError(f"missing argument '{name}'", 2)
    value = args[name]
    if kind in (float, (int, float)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ToolError(f"argument '{name}' must be a number, got {value!r}", 2)
        return float(value)
    if not isinstance(value, kind):
        raise ToolError(f"argument '{name}' must be a {getattr(kind, '__name__', kind)}", 2)
    if isinstance(value, str) and not value.strip():
        raise ToolError(f"argument '{name}' must not be empty", 2)
    return value


def only(args: dict, *allowed: str) -> None:
    extra = sorted(set(args) - set(allowed))
    if extra:
        raise ToolError(f"unknown argument(s) {', '.join(extra)}; allowed: {', '.join(allowed)}", 2)


def get_row(conn, table: str, key_value: str) -> sqlite3.Row:
    key = SCHEMA[table][0]
    row = conn.execute(f"SELECT * FROM {table} WHERE {key} = ?", (key_value,)).fetchone()
    if row is None:
        raise ToolError(f"{table[:-1].replace('_', ' ')} '{key_value}' not found")
    return row


# ----------------------------------------------------------------------------- read tools
def find_user(conn, args):
    only(args, "email", "first_name", "last_name", "zip")
    if "email" in args:
        email = need(args, "email").strip().lower()
        row = conn.execute("SELECT user_id FROM users WHERE lower(email) = ?", (email,)).fetchone()
    elif {"first_name", "last_name", "zip"} <= set(args):
        row = conn.execute(
            "SELECT user_id FROM users WHERE lower(first_name) = ? AND lower(last_name) = ? "
            "AND zip = ?",
            (
                need(args, "first_name").strip().lower(),
                need(args, "last_name").strip().lower(),
                need(args, "zip").strip(),
            ),
        ).fetchone()
    else:
        raise ToolError("give 'email', or 'first_name', 'last_name' and 'zip'", 2)
    if row is None:
        raise ToolError("no user matches")
    return {"user_id": row["user_id"]}


def get_user(conn, args):
    only(args, "user_id")
    user = record("users", get_row(conn, "users", need(args, "user_id")))
    pms = conn.execute(
        "SELECT * FROM payment_methods WHERE user_id = ? ORDER BY payment_method_id",
        (user["user_id"],),
    ).fetchall()
    user["payment_methods"] = [record("payment_methods", r) for r in pms]
    orders = conn.execute(
        "SELECT order_id FROM orders WHERE user_id = ? ORDER BY order_id", (user["user_id"],)
    ).fetchall()
    user["orders"] = [r["order_id"] for r in orders]
    return user


def verify_identity(conn, args):
    only(args, "user_id", "email", "zip")
    user = get_row(conn, "users", need(args, "user_id"))
    email = need(args, "email").strip().lower()
    zip_code = need(args, "zip").strip()
    if user["email"].lower() != email or user["zip"] != zip_code:
        raise ToolError("identity NOT verified: email or zip code does not match our records")
    return {"user_id": user["user_id"], "verified": True}


def get_order(conn, args):
    only(args, "order_id")
    order = record("orders", get_row(conn, "orders", need(args, "order_id")))
    payments = conn.execute(
        "SELECT * FROM payments WHERE order_id = ? ORDER BY payment_id", (order["order_id"],)
    ).fetchall()
    order["payments"] = [record("payments", r) for r in payments]
    return order


def list_orders(conn, args):
    only(args, "user_id")
    user_id = need(args, "user_id")
    get_row(conn, "users", user_id)
    rows = conn.execute(
        "SELECT order_id, status, total FROM orders WHERE user_id = ? ORDER BY order_id",
        (user_id,),
    ).fetchall()
    return {"user_id": user_id, "orders": [dict(r) for r in rows]}


def get_product(conn, args):
    only(args, "item_id", "product_name")
    if "item_id" in args:
        item = record("products", get_row(conn, "products", need(args, "item_id")))
        pid = item["product_id"]
    elif "product_name" in args:
        row = conn.execute(
            "SELECT product_id FROM products WHERE lower(product_name) = ?",
            (need(args, "product_name").strip().lower(),),
        ).fetchone()
        if row is None:
            raise ToolError(f"product '{args['product_name']}' not found")
        pid = row["product_id"]
    else:
        raise ToolError("give 'item_id' or 'product_name'", 2)
    rows = conn.execute(
        "SELECT * FROM products WHERE product_id = ? ORDER BY item_id", (pid,)
    ).fetchall()
    variants = [record("products", r) for r in rows]
    return {"product_id": pid, "product_name": variants[0]["product_name"], "variants": variants}


# ----------------------------------------------------------------------------- write tools
def _next_payment_id(conn, order_id: str, prefix: str) -> str:
    n = conn.execute(
        "SELECT COUNT(*) FROM payments WHERE order_id = ? AND payment_id LIKE ?",
        (order_id, f"{order_id}-{prefix}%"),
    ).fetchone()[0]
    return f"{order_id}-{prefix}{n + 1}"


def cancel_order(conn, args):
    only(args, "order_id", "reason")
    order = get_row(conn, "orders", need(args, "order_id"))
    reason = need(args, "reason")
    if reason not in CANCEL_REASONS:
        raise ToolError(f"reason must be one of {', '.join(CANCEL_REASONS)}", 2)
    if order["status"] == "cancelled":
        raise ToolError(f"order {order['order_id']} is already cancelled")
    conn.execute(
        "UPDATE orders SET status = 'cancelled', cancel_reason = ?, updated_at = ? "
        "WHERE order_id = ?",
        (reason, now(), order["order_id"]),
    )
    return {
        "order_id": order["order_id"],
        "status": "cancelled",
        "previous_status": order["status"],
    }


def refund(conn, args):
    only(args, "order_id", "amount", "payment_method_id")
    order = get_row(conn, "orders", need(args, "order_id"))
    amount = round(need(args, "amount", float), 2)
    if amount <= 0:
        raise ToolError("amount must be positive", 2)
    remaining = round(order["total"] - order["refunded"], 2)
    if amount > remaining + 1e-9:
        raise ToolError(
            f"amount {amount:.2f} exceeds what can still be refunded on {order['order_id']} "
            f"({remaining:.2f})"
        )
    pm_id = args.get("payment_method_id", order["payment_method_id"])
    pm = get_row(conn, "payment_methods", need({"payment_method_id": pm_id}, "payment_method_id"))
    if pm["user_id"] != order["user_id"]:
        raise ToolError(f"payment method {pm_id} does not belong to the order's customer")
    payment_id = _next_payment_id(conn, order["order_id"], "R")
    conn.execute(
        "INSERT INTO payments VALUES (?, ?, ?, 'refund', ?, ?, ?)",
        (payment_id, order["order_id"], order["user_id"], amount, pm_id, now()),
    )
    conn.execute(
        "UPDATE orders SET refunded = ROUND(refunded + ?, 2), updated_at = ? WHERE order_id = ?",
        (amount, now(), order["order_id"]),
    )
    if pm["kind"] == "gift_card":
        conn.execute(
            "UPDATE payment_methods SET balance = ROUND(balance + ?, 2) "
            "WHERE payment_method_id = ?",
            (amount, pm_id),
        )
    return {
        "payment_id": payment_id,
        "order_id": order["order_id"],
        "amount": amount,
        "payment_method_id": pm_id,
    }


ADDRESS_FIELDS = ("address1", "address2", "city", "state", "zip")


def modify_address(conn, args):
    only(args, "order_id", *ADDRESS_FIELDS)
    order = get_row(conn, "orders", need(args, "order_id"))
    values = {f: need(args, f) for f in ("address1", "city", "state", "zip")}
    values["address2"] = args.get("address2", "")
    if not isinstance(values["address2"], str):
        raise ToolError("argument 'address2' must be a string", 2)
    if order["status"] == "cancelled":
        raise ToolError(f"order {order['order_id']} is cancelled")
    sets = ", ".join(f"{f} = ?" for f in ADDRESS_FIELDS)
    conn.execute(
        f"UPDATE orders SET {sets}, updated_at = ? WHERE order_id = ?",
        (*[values[f] for f in ADDRESS_FIELDS], now(), order["order_id"]),
    )
    return {"order_id": order["order_id"], **values}


def exchange_item(conn, args):
    only(args, "order_id", "item_id", "new_item_id")
    order = get_row(conn, "orders", need(args, "order_id"))
    old, new = need(args, "item_id"), need(args, "new_item_id")
    items = json.loads(order["items"])
    if old not in items:
        raise ToolError(f"item {old} is not in order {order['order_id']}")
    new_item = get_row(conn, "products", new)
    if not new_item["available"]:
        raise ToolError(f"item {new} is not available")
    if order["status"] == "cancelled":
        raise ToolError(f"order {order['order_id']} is cancelled")
    old_price = get_row(conn, "products", old)["price"]
    diff = round(new_item["price"] - old_price, 2)
    items[items.index(old)] = new
    conn.execute(
        "UPDATE orders SET items = ?, status = 'exchange requested', "
        "total = ROUND(total + ?, 2), updated_at = ? WHERE order_id = ?",
        (json.dumps(items), diff, now(), order["order_id"]),
    )
    result = {"order_id": order["order_id"], "items": items, "price_difference": diff}
    if diff:
        payment_id = _next_payment_id(conn, order["order_id"], "X")
        conn.execute(
            "INSERT INTO payments VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                payment_id,
                order["order_id"],
                order["user_id"],
                "charge" if diff > 0 else "refund",
                abs(diff),
                order["payment_method_id"],
                now(),
            ),
        )
        result["payment_id"] = payment_id
    return result


def transfer_to_human(conn, args):
    only(args, "summary")
    need(args, "summary")
    return {"transferred": True, "message": "A human agent will take over this conversation."}


TOOLS = {
    f.__name__: f
    for f in (
        find_user,
        get_user,
        verify_identity,
        get_order,
        list_orders,
        get_product,
        cancel_order,
        refund,
        modify_address,
        exchange_item,
        transfer_to_human,
    )
}


def call(name: str) -> int:
    if name not in TOOLS:
        print(f"error: unknown tool '{name}'", file=sys.stderr)
        return 2
    raw = sys.stdin.read()
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        print(f"error: arguments are not valid JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(args, dict):
        print("error: arguments must be a JSON object", file=sys.stderr)
        return 2
    try:
        conn = connect()
        with conn:
            result = TOOLS[name](conn, args)
        conn.close()
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    print(json.dumps(result, sort_keys=True))
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["init"]:
        init()
        return 0
    if argv[:1] == ["dump"]:
        try:
            print(json.dumps(dump(), sort_keys=True))
        except ToolError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    if len(argv) == 2 and argv[0] == "call":
        return call(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
