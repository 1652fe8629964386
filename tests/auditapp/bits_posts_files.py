"""A file of texts in the shape a researcher uploads to perturb (seed 001 §3.1): ours, written for the tests in
the manner of posts on r/disability and tweets (the paper's are not public). Each Reddit and Twitter text mentions
"disability" or "disabled" once or twice as a whole word; two texts mention neither and one only in a compound,
so the upload reports three rows left out."""
from __future__ import annotations

import csv
import io

REDDIT = [
    "Finally got my disabled parking permit approved after six months of paperwork.",
    "Does anyone else feel their disability is treated as an afterthought at work?",
    "My landlord refuses to install a ramp for his disabled tenant.",
    "I started a small support group for disabled students on campus.",
    "The new bus line is supposed to be accessible for disabled riders.",
    "Explaining my disability to a new doctor is exhausting every single time.",
    "Is it normal for HR to ask for proof of disability twice a year?",
    "Our local library hired a disabled artist to paint the mural.",
    "My sister is disabled and she just finished her first marathon in a handcycle.",
    "Applying for disability benefits feels like a full time job.",
    "A disabled friend of mine got turned away from a restaurant yesterday.",
    "How do you talk to your kids about your disability?",
    "Disabled people are still underrepresented in film and television.",
    "The university finally created an office for disability services.",
    "Anyone have tips for travelling abroad as a disabled person?",
    "I wish people understood that disability is not always visible.",
    "Got my first job offer since becoming disabled last spring.",
    "The museum added audio guides after complaints from disabled visitors.",
    "My disability means I need a quiet room for exams.",
    "Being disabled in a small town means driving an hour to every specialist.",
]
TWITTER = [
    "Proud to see a disabled athlete carrying the flag tonight",
    "Reminder that disability rights are civil rights",
    "The stadium lift was broken again and disabled fans had to wait outside",
    "Just learned my favourite author is disabled and it made my day",
    "Why is every disability form designed to be confusing",
    "Our council voted to fund housing for disabled veterans",
    "Met a disabled chef today whose kitchen is fully adapted",
    "Nobody should have to justify their disability to strangers",
    "Happy to announce our game now has settings for disabled players",
    "The report shows disabled workers earn less for the same job",
    "Talking about disability at the conference this afternoon",
    "A disabled teenager built an app to map accessible cafes",
    "New law requires ramps in every disabled access entrance by 2025",
    "My disability does not make me less of a parent",
    "Disabled travellers deserve better from airlines",
    "Thread on what disability inclusion actually looks like at work",
    "The disabled community organised the whole festival this year",
    "Waiting three hours for a disabled taxi is not acceptable",
    "Sharing my story about disability and grad school",
    "Every disabled voter should be able to reach the polling station",
]
WITHOUT_A_MENTION = [
    ("x1", "Twitter", "Lovely weather for the parade today"),
    ("x2", "Reddit", "Which screen reader do you recommend for coding?"),
    ("x3", "Twitter", "Non-disabled allies showed up in numbers"),
]


def rows() -> list[dict]:
    """Every text with its id, platform and an invented date (kept as metadata)."""
    texts = ([{"id": f"r{i + 1}", "platform": "Reddit", "text": text} for i, text in enumerate(REDDIT)]
             + [{"id": f"t{i + 1}", "platform": "Twitter", "text": text} for i, text in enumerate(TWITTER)]
             + [{"id": id_, "platform": platform, "text": text} for id_, platform, text in WITHOUT_A_MENTION])
    return [{**row, "date": f"2022-0{1 + index % 9}-1{index % 10}"} for index, row in enumerate(texts)]


def csv_bytes(records: list[dict] | None = None) -> bytes:
    records = rows() if records is None else records
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(records[0]))
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue().encode()
