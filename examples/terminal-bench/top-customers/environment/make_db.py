"""Build the shop database (the same every time: a fixed seed)."""

import random
import sqlite3
import sys

rng = random.Random(2025)
db = sqlite3.connect(sys.argv[1])
db.execute("create table customers (id integer primary key, name text not null)")
db.execute(
    "create table orders (id integer primary key, customer_id integer not null, "
    "amount_cents integer not null, status text not null)"
)
names = ["Ada", "Grace", "Linus", "Barbara", "Ken", "Radia", "Donald", "Frances"]
db.executemany("insert into customers values (?, ?)", enumerate(names, 1))
for _ in range(120):
    status = rng.choice(["paid"] * 4 + ["refunded", "pending"])
    db.execute(
        "insert into orders (customer_id, amount_cents, status) values (?, ?, ?)",
        (rng.randint(1, len(names)), rng.randint(100, 20000), status),
    )
# A refunded order big enough to change the ranking if it were counted.
db.execute("insert into orders (customer_id, amount_cents, status) values (8, 900000, 'refunded')")
db.commit()
