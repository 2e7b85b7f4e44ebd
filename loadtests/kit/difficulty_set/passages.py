"""Longer texts that prompts of the evaluation set quote: prose, code, logs and data.

They make long-but-easy prompts (extract a date from a long email) and long-and-hard ones
(reconcile two invoices) possible, so length alone does not give the label away.
"""

from __future__ import annotations

LANDLORD_EMAIL = """\
Dear residents of 14 Alder Street,

I hope this message finds you well. I am writing to let you know about several maintenance
visits planned for the building over the next few weeks. On Tuesday, March 12, the elevator
company will carry out its yearly inspection between 9:00 and 13:00; the lift will be out of
service during that window, so please plan deliveries accordingly. On Friday, March 22, a
plumber from Brightwater Services will check the hot-water boilers in the basement. Water
may be cut for up to two hours in the morning. Finally, the window cleaners are booked for
the first week of April, weather permitting, and they will need access to balconies on the
east side.

If any of these dates are a problem for you, please contact me at
maria.keller@alderhomes.example or call the office on 555-0142 during working hours. For
urgent issues outside office hours, the caretaker, Tom Brennan, can be reached on 555-0199
or at tom.b@alderhomes.example.

Thank you for your patience and cooperation.

Kind regards,
Maria Keller
Property Manager, Alder Homes"""

MEETING_NOTES = """\
Marketing sync - notes (Thursday)

Attendees: Priya Nair, Daniel Osei, Lena Fischer, Marco Rossi, Aiko Tanaka

1. Spring campaign: Priya presented the draft landing page. Daniel thinks the hero image is
   too dark; Lena will ask the design agency for two alternatives by Monday.
2. Budget: we are at 72% of the quarterly budget with five weeks to go. Marco wants to move
   4,000 EUR from paid search to the podcast sponsorship, but that needs sign-off from
   finance, and finance will only sign off once the Q1 report is out.
3. Webinar: Aiko confirmed the guest speaker for April 18. Registration page goes live once
   Priya finishes the landing page, since both share the same template.
4. The Q1 report is late because Daniel is waiting for the podcast numbers from Marco.
5. Newsletter: skip this month; resume in May.

Action items: Lena - agency alternatives (Mon). Priya - landing page (Wed). Marco - podcast
numbers to Daniel (Fri). Daniel - Q1 report (after podcast numbers). Aiko - speaker bio."""

PRODUCT_PAGE = """\
The Meridian Burr Grinder is built for people who take their morning cup seriously. Its
40 mm conical steel burrs turn at a gentle 450 rpm, which keeps the beans cool and the
flavour intact. Choose from 31 grind settings, from fine espresso to coarse French press,
with a single turn of the collar. The 250 g hopper is made of tinted glass to protect beans
from light, and the anti-static catch cup holds enough grounds for a full 1-litre carafe.

Dimensions: 14 x 19 x 36 cm. Weight: 2.8 kg. Power: 150 W. Colours: matte black, sage green,
and cream. Price: 189 EUR (cream edition 199 EUR). Warranty: 3 years, extendable to 5 years
when you register the grinder online within 30 days of purchase. In the box: grinder,
catch cup, cleaning brush, and a quick-start guide in six languages."""

LIGHTHOUSE_STORY = """\
Every evening at half past six, Edda climbed the hundred and twelve steps of the lighthouse
at Vardø Point. She had done it for nineteen years, first with her father and then alone,
after his knees gave out. The lamp no longer needed her - it had been automated the winter
the harbour froze - but she wound the old clock anyway and wrote the weather in the log.

On the night of the storm, she saw a small red boat drifting past the northern rocks with
no lights. She called the harbour master, Jonas, who said the coastguard cutter was two
hours away. Edda took her father's green rowing boat instead. By the time the cutter
arrived, she had towed the red boat and its two shivering passengers, a boy and his
grandmother, into the lee of the pier. The next morning the boy left a drawing of the
lighthouse on her doorstep, with the lamp coloured bright yellow."""

SUPPORT_CHAT = """\
Customer: Hi, my order #48213 arrived yesterday but the blender jar is cracked.
Agent: I'm sorry to hear that! Could you send a photo of the damage?
Customer: Sure, just uploaded it. Also the invoice says 2 jars but I only ordered one.
Agent: Thanks. I can see the photo. You were charged for one jar; the invoice lists the
spare lid as a second line, which is confusing, I agree.
Customer: OK. Can I get a replacement rather than a refund? I need it before Saturday.
Agent: A replacement jar can ship today by express and should arrive Thursday.
Customer: Perfect, please do that. My new address is 9 Harbour Lane, Leith, though.
Agent: Noted - the replacement will go to 9 Harbour Lane. You'll get tracking by email."""

BIKE_ARTICLE = """\
Three years after the city council approved its cycling plan, Lindholm now has 84 km of
protected bike lanes, up from 31 km in 2021. Daily bike trips counted at the twelve
automatic counters rose from about 18,500 to 41,200, while car traffic on the same streets
fell by 11 percent. Shop owners on Kirkegade had feared the loss of 140 parking spaces,
but a survey by the chamber of commerce found that 58 percent of them reported stable or
higher sales. The plan cost 212 million crowns, 30 percent of it paid by a national grant.
Critics point out that the outer districts, where bus service is weakest, received only 9 km
of the new lanes, and that collisions at junctions have not fallen as fast as hoped."""

INVOICE_A = """\
Invoice 2024-0311 (Northwind Supplies -> Harbor Cafe)
- Espresso beans, 1 kg, qty 12, unit 18.50, total 222.00
- Oat milk, 1 l, qty 48, unit 1.90, total 91.20
- Paper cups 12 oz, box of 500, qty 4, unit 31.00, total 124.00
- Delivery, qty 1, total 15.00
Subtotal 452.20, VAT 20% 90.44, Total 542.64"""

INVOICE_B = """\
Purchase order PO-77 (Harbor Cafe), delivery note attached
- Espresso beans 1 kg x 12 @ 18.00
- Oat milk 1 l x 40 @ 1.90
- Paper cups 12 oz (500) x 4 @ 31.00
- Delivery free above 400.00 net
Note: 8 cartons of oat milk were returned damaged on arrival."""

CONTRACT = """\
1. Effective Date. This Agreement takes effect on 1 June 2024 (the "Effective Date").
2. Services. The Supplier shall deliver the monthly analytics report no later than ten (10)
   business days after the end of each calendar month.
3. Fees. The Client shall pay each invoice within thirty (30) days of receipt. Late payments
   accrue interest at 1% per month.
4. Term. The initial term is twelve (12) months from the Effective Date and renews for
   successive six-month periods unless either party gives notice under clause 9.
5. Data. The Supplier shall delete Client data within 30 days after termination, except as
   required by law, and shall certify deletion in writing.
6. Reports. Notwithstanding clause 2, reports for December are due on 20 January.
9. Notice. Notice of non-renewal must be given at least sixty (60) days before the end of the
   then-current term. The Client may terminate for convenience with 90 days' notice after
   the first six months."""

PY_AVERAGE = """\
def average_score(records):
    total = 0
    count = 0
    for record in records:
        if record.get("score") is None:
            continue
        total += record["score"]
        count += 1
    if count == 0:
        return 0.0
    return total / count"""

JS_RENDER = """\
async function loadUsers() {
  const response = await fetch("/api/users");
  const users = await response.json();
  const list = document.getElementById("users");
  list.innerHTML = "";
  for (const user of users) {
    const item = document.createElement("li");
    item.textContent = user.name + " (" + user.email + ")";
    list.appendChild(item);
  }
}"""

SQL_REPORT = """\
SELECT c.name, COUNT(o.id) AS orders, SUM(o.amount) AS revenue
FROM customers c
LEFT JOIN orders o ON o.customer_id = c.id
WHERE o.created_at >= '2024-01-01'
GROUP BY c.name
ORDER BY revenue DESC
LIMIT 20;"""

JAVA_POINT = """\
public class Point {
    private final int x;
    private final int y;

    public Point(int x, int y) {
        this.x = x;
        this.y = y;
    }

    public int getX() { return x; }
    public int getY() { return y; }
}"""

GO_CACHE = """\
type Cache struct {
    mu    sync.Mutex
    items map[string]entry
}

func (c *Cache) Get(key string) (string, bool) {
    c.mu.Lock()
    e, ok := c.items[key]
    if ok && time.Now().After(e.expires) {
        c.mu.Lock()
        delete(c.items, key)
        c.mu.Unlock()
        return "", false
    }
    c.mu.Unlock()
    return e.value, ok
}"""

PY_WORKERS = """\
import threading

balance = 0
lock = threading.Lock()

def deposit(n):
    global balance
    for _ in range(n):
        current = balance
        with lock:
            balance = current + 1

threads = [threading.Thread(target=deposit, args=(100_000,)) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(balance)  # expected 800000, prints less"""

PY_TRACE = """\
Traceback (most recent call last):
  File "/srv/app/worker.py", line 88, in run
    batch = self.queue.get(timeout=5)
  File "/usr/lib/python3.11/multiprocessing/queues.py", line 114, in get
    raise Empty
_queue.Empty

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/srv/app/worker.py", line 95, in run
    self.pool.apply_async(process, (batch,), callback=self.done)
  File "/usr/lib/python3.11/multiprocessing/pool.py", line 458, in apply_async
    self._check_running()
ValueError: Pool not running"""

JAVA_TRACE = """\
Exception in thread "scheduler-3" java.util.ConcurrentModificationException
    at java.base/java.util.HashMap$HashIterator.nextNode(HashMap.java:1597)
    at java.base/java.util.HashMap$KeyIterator.next(HashMap.java:1620)
    at com.acme.jobs.Scheduler.expireSessions(Scheduler.java:212)
    at com.acme.jobs.Scheduler.lambda$start$0(Scheduler.java:88)
    at java.base/java.util.concurrent.Executors$RunnableAdapter.call(Executors.java:572)"""

ORDER_JSON = """\
{"order": {"id": "A-1042", "customer": {"name": "Ines Duarte", "email": "ines@example.org"},
 "items": [{"sku": "KB-01", "qty": 1, "price": 79.0}, {"sku": "MS-07", "qty": 2, "price": 24.5}],
 "shipping": {"method": "standard", "city": "Porto"}, "status": "shipped"}}"""

SERVER_LOG = """\
2024-05-02T10:14:03Z INFO  api  GET /v1/items 200 12ms
2024-05-02T10:14:05Z WARN  api  slow query on items_by_owner 840ms
2024-05-02T10:14:09Z INFO  api  GET /v1/items 200 15ms
2024-05-02T10:14:11Z ERROR db   connection reset by peer (pool=primary, in_use=50/50)
2024-05-02T10:14:11Z ERROR api  GET /v1/orders 503 5002ms
2024-05-02T10:14:12Z INFO  api  POST /v1/login 200 31ms
2024-05-02T10:14:15Z ERROR db   connection reset by peer (pool=primary, in_use=50/50)
2024-05-02T10:14:16Z WARN  api  retry budget exhausted for orders-service"""
