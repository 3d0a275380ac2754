//! English vocabulary, dialogue scripts and question templates.

use super::lex::{
    Ask, Kind, Lang, Lex, Mode, Multi, RelKind, book, hobby, injury, item, job, phr, race, rel,
    species,
};

pub(crate) const LEX: Lex = Lex {
    lang: Lang::En,
    sep: ": ",
    female: &[
        "Maya", "Priya", "Hannah", "Chloe", "Zoe", "Leah", "Grace", "Ellie", "Nora", "Amara",
        "Freya", "Isla", "Ruby", "Tessa", "Naomi", "Alice", "Lucy", "Megan", "Iris", "Sofia",
        "Holly", "Rosa", "Bea", "Carmen", "Fiona", "Gemma", "Kate", "Yasmin", "Harriet", "Imogen",
    ],
    male: &[
        "Jordan", "Sam", "Tom", "Ravi", "Leo", "Ben", "Owen", "Jamie", "Marcus", "Dan", "Luke",
        "Theo", "Kieran", "Noah", "Felix", "Ollie", "Arjun", "Callum", "Ethan", "Josh", "Matt",
        "Nick", "Reece", "Will", "Adam", "Cole", "Elliot", "Finn", "Hugo", "Isaac",
    ],
    minor_female: &[
        "Ana", "Beth", "Clara", "Daisy", "Esme", "Faye", "Gina", "Heidi", "Jade", "Kira", "Lola",
        "Mia", "Nina", "Orla", "Pippa", "Rhea", "Sadie", "Tara", "Una", "Vera", "Willa", "Polly",
        "Ivy", "Molly",
    ],
    minor_male: &[
        "Alfie", "Barney", "Connor", "Dev", "Eddie", "Frank", "George", "Harry", "Ivan", "Jack",
        "Kit", "Louis", "Max", "Ned", "Oscar", "Pete", "Rory", "Stan", "Toby", "Vic", "Wes",
        "Zach", "Joel", "Rob",
    ],
    jobs: &[
        job(
            "nurse",
            "a nurse",
            "St Luke's",
            "I did three night shifts in a row on the children's ward",
        ),
        job(
            "primary school teacher",
            "a primary school teacher",
            "Hollybrook Primary",
            "I had parents' evening until eight",
        ),
        job(
            "software developer",
            "a software developer",
            "Ledgerly",
            "we're pushing a huge release on Friday",
        ),
        job(
            "pharmacist",
            "a pharmacist",
            "the Boots on Market Street",
            "the flu jab queue went out the door today",
        ),
        job(
            "architect",
            "an architect",
            "Hale & Birch",
            "I've redrawn the same library extension six times",
        ),
        job(
            "baker",
            "a baker",
            "Crumb & Co",
            "I've been up at four every morning shaping sourdough",
        ),
        job(
            "physiotherapist",
            "a physiotherapist",
            "the Riverside sports clinic",
            "I saw eleven dodgy knees today",
        ),
        job(
            "accountant",
            "an accountant",
            "Marlow Grant",
            "it's year-end and I'm drowning in spreadsheets",
        ),
        job(
            "graphic designer",
            "a graphic designer",
            "Foxglove Studio",
            "the client rejected the logo for the fourth time",
        ),
        job(
            "chef",
            "a chef",
            "Nonna Rosa",
            "we did a hundred and forty covers on Saturday",
        ),
        job(
            "vet nurse",
            "a vet nurse",
            "Greenway Vets",
            "I held a very angry cat for a blood test this morning",
        ),
        job(
            "journalist",
            "a journalist",
            "the Evening Post",
            "I'm chasing a story about the council budget",
        ),
        job(
            "librarian",
            "a librarian",
            "the central library",
            "forty toddlers turned up to story time",
        ),
        job(
            "paramedic",
            "a paramedic",
            "the ambulance service",
            "the twelve-hour shifts are flattening me",
        ),
        job(
            "data analyst",
            "a data analyst",
            "Northstar Insurance",
            "I spent all day fixing one broken dashboard",
        ),
        job(
            "sound engineer",
            "a sound engineer",
            "Blackbird Studios",
            "a band kept us in the studio until 2am",
        ),
        job(
            "civil engineer",
            "a civil engineer",
            "Arden Rail",
            "I've been on site in the rain all week",
        ),
        job(
            "estate agent",
            "an estate agent",
            "Parker Homes",
            "I did nine viewings on Saturday",
        ),
        job(
            "bike mechanic",
            "a bike mechanic",
            "Spokes",
            "I fixed fourteen punctures before lunch",
        ),
        job(
            "dental hygienist",
            "a dental hygienist",
            "Mill Road Dental",
            "I've accepted that nobody flosses, nobody",
        ),
        job(
            "solicitor",
            "a solicitor",
            "Carter Lowe",
            "I've got three completions due on Friday",
        ),
        job(
            "museum curator",
            "a museum curator",
            "the maritime museum",
            "we're installing a new exhibition and nothing fits",
        ),
    ],
    species: &[
        species(
            "dog",
            "puppy",
            &[
                "beagle",
                "greyhound",
                "border collie",
                "dachshund",
                "spaniel",
            ],
            &[
                "stole a whole sandwich off the counter",
                "chewed my slippers to bits",
                "rolled in something disgusting at the park",
                "barked at a leaf for ten minutes",
            ],
        ),
        species(
            "cat",
            "kitten",
            &["tabby", "ginger", "black", "Siamese"],
            &[
                "knocked my coffee off the table",
                "sat on my laptop during a work call",
                "brought a live frog into the kitchen",
                "shredded the new curtains",
            ],
        ),
        species(
            "rabbit",
            "bunny",
            &["lop-eared"],
            &[
                "chewed through my phone charger",
                "hid behind the sofa for an hour",
                "dug a hole in the carpet",
            ],
        ),
        species(
            "tortoise",
            "baby tortoise",
            &[],
            &[
                "escaped from the garden again, very slowly",
                "refused every vegetable I offered",
                "got stuck under the shed",
            ],
        ),
        species(
            "guinea pig",
            "guinea pig",
            &[],
            &[
                "squeaked at me all night for lettuce",
                "ate a whole cucumber in one go",
                "escaped under the fridge",
            ],
        ),
        species(
            "parrot",
            "parrot",
            &["grey"],
            &[
                "learned to copy my ringtone",
                "shouted hello through an entire video call",
                "chewed a chunk out of the window frame",
            ],
        ),
    ],
    fam_rels: &[
        rel("sister", true, RelKind::Young),
        rel("brother", false, RelKind::Young),
        rel("cousin", true, RelKind::Young),
        rel("cousin", false, RelKind::Young),
        rel("aunt", true, RelKind::Elder),
        rel("uncle", false, RelKind::Elder),
        rel("best friend", true, RelKind::Outside),
        rel("best friend", false, RelKind::Outside),
        rel("neighbour", true, RelKind::Outside),
        rel("neighbour", false, RelKind::Outside),
        rel("old flatmate", true, RelKind::Outside),
        rel("old flatmate", false, RelKind::Outside),
        rel("work friend", true, RelKind::Outside),
        rel("work friend", false, RelKind::Outside),
    ],
    hobbies: &[
        hobby("bouldering", "I finally got up a V4"),
        hobby("sourdough baking", "my starter is basically a pet now"),
        hobby("birdwatching", "I saw a kingfisher on Sunday"),
        hobby("woodworking", "I made a slightly wonky stool"),
        hobby("open-water swimming", "the lake was eleven degrees"),
        hobby("crochet", "I'm halfway through a blanket"),
        hobby("chess", "my online rating just hit 1400"),
        hobby(
            "playing the cello",
            "I can almost get through a Bach prelude",
        ),
        hobby("trail running", "I did twenty kilometres on Sunday"),
        hobby("film photography", "I developed my first roll at home"),
        hobby("gardening", "the tomatoes are finally coming up"),
        hobby("kayaking", "I capsized twice on Saturday"),
        hobby("watercolour painting", "I painted the view from my window"),
        hobby("padel", "we lost 6-1 but it was the best hour of my week"),
        hobby("yoga", "I can touch my toes now"),
        hobby("knitting", "I finished my first jumper"),
    ],
    races: &[
        race(
            "the Bristol Half Marathon",
            &["1:52", "1:47", "2:05", "1:58"],
        ),
        race("the Leeds 10K", &["48:30", "52:10", "55:02"]),
        race("the Great North Run", &["2:01", "1:49", "2:12"]),
        race("the Chicago Marathon", &["4:12", "3:56", "4:31"]),
        race("the Windermere sprint triathlon", &["1:21", "1:34"]),
        race("the Brecon trail race", &["3:40", "3:55"]),
        race("the Manchester 10K", &["47:15", "51:40", "58:03"]),
        race("the Dublin Marathon", &["4:05", "3:49", "4:22"]),
        race("the Bath Half", &["1:55", "2:08", "1:44"]),
    ],
    injuries: &[
        injury(
            "sprained my ankle",
            "sprain {her} ankle",
            "sprained {her} ankle",
            "spraining {her} ankle",
            "ankle",
        ),
        injury(
            "broke my wrist",
            "break {her} wrist",
            "broke {her} wrist",
            "breaking {her} wrist",
            "wrist",
        ),
        injury(
            "pulled a muscle in my back",
            "pull a muscle in {her} back",
            "pulled a muscle in {her} back",
            "pulling a muscle in {her} back",
            "back",
        ),
        injury(
            "twisted my knee",
            "twist {her} knee",
            "twisted {her} knee",
            "twisting {her} knee",
            "knee",
        ),
        injury(
            "cracked a rib",
            "crack a rib",
            "cracked a rib",
            "cracking a rib",
            "rib",
        ),
        injury(
            "dislocated my shoulder",
            "dislocate {her} shoulder",
            "dislocated {her} shoulder",
            "dislocating {her} shoulder",
            "shoulder",
        ),
        injury(
            "broke my toe",
            "break {her} toe",
            "broke {her} toe",
            "breaking {her} toe",
            "toe",
        ),
    ],
    items: &[
        item("a second-hand piano", "piano"),
        item("a used Toyota Yaris", "car"),
        item("a road bike", "road bike"),
        item("an espresso machine", "espresso machine"),
        item("a sit-on-top kayak", "kayak"),
        item("a vintage record player", "record player"),
        item("a sofa bed", "sofa bed"),
        item("a sewing machine", "sewing machine"),
        item("a telescope", "telescope"),
        item("an electric bike", "e-bike"),
        item("a 3D printer", "3D printer"),
        item("a camper van", "camper van"),
        item("a drum kit", "drum kit"),
    ],
    books: &[
        book("Pachinko", "Min Jin Lee"),
        book("Project Hail Mary", "Andy Weir"),
        book("The Remains of the Day", "Kazuo Ishiguro"),
        book("Demon Copperhead", "Barbara Kingsolver"),
        book("Lessons in Chemistry", "Bonnie Garmus"),
        book("Piranesi", "Susanna Clarke"),
        book("Educated", "Tara Westover"),
        book("Normal People", "Sally Rooney"),
        book("The Overstory", "Richard Powers"),
        book("Circe", "Madeline Miller"),
        book("Station Eleven", "Emily St. John Mandel"),
        book("Shuggie Bain", "Douglas Stuart"),
        book("The Midnight Library", "Matt Haig"),
        book("Never Let Me Go", "Kazuo Ishiguro"),
        book("Small Things Like These", "Claire Keegan"),
    ],
    wed_whose: &[
        ("my friend", "{her} friend"),
        ("my old flatmate", "{her} old flatmate"),
        ("my uni friend", "{her} uni friend"),
        ("my colleague", "{her} colleague"),
        ("my childhood friend", "{her} childhood friend"),
    ],
    numbers: &[
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ],
    values: &[
        (
            "city",
            &[
                "Leeds",
                "Bristol",
                "Manchester",
                "Glasgow",
                "Dublin",
                "Edinburgh",
                "Cardiff",
                "Brighton",
                "Sheffield",
                "Boston",
                "Toronto",
                "Melbourne",
                "Seattle",
                "Chicago",
                "Denver",
                "Portland",
                "Vancouver",
                "Nottingham",
                "Newcastle",
                "Liverpool",
            ],
        ),
        (
            "place",
            &[
                "Lisbon",
                "Kyoto",
                "Reykjavik",
                "the Isle of Skye",
                "Barcelona",
                "Marrakech",
                "Copenhagen",
                "Vienna",
                "Crete",
                "the Lake District",
                "Seville",
                "Prague",
                "Budapest",
                "Naples",
                "Tallinn",
                "Bruges",
                "Banff",
                "New Orleans",
                "Oaxaca",
                "Hanoi",
                "Porto",
                "Cornwall",
                "Ljubljana",
                "Sicily",
            ],
        ),
        (
            "pet_name",
            &[
                "Biscuit",
                "Miso",
                "Pickle",
                "Juniper",
                "Mochi",
                "Waffles",
                "Olive",
                "Pepper",
                "Bean",
                "Nugget",
                "Maple",
                "Ziggy",
                "Tofu",
                "Clementine",
                "Pretzel",
                "Hazel",
                "Rocket",
                "Dumpling",
                "Ginger",
                "Basil",
                "Bramble",
                "Otis",
                "Luna",
                "Pip",
                "Crumpet",
                "Fig",
                "Noodle",
                "Scout",
                "Toast",
                "Mabel",
            ],
        ),
        (
            "band",
            &[
                "Arctic Monkeys",
                "Fontaines D.C.",
                "Hozier",
                "Phoebe Bridgers",
                "The National",
                "Khruangbin",
                "Coldplay",
                "Bon Iver",
                "Little Simz",
                "Wet Leg",
                "Nick Cave",
                "Florence + the Machine",
                "Mitski",
                "Bloc Party",
                "Elbow",
                "Lizzo",
                "Massive Attack",
                "Paramore",
                "Sam Fender",
                "Fleet Foxes",
            ],
        ),
        (
            "venue",
            &[
                "the O2",
                "Brixton Academy",
                "the Roundhouse",
                "the Royal Albert Hall",
                "the Barrowland",
                "a tiny club by the river",
                "the arena",
                "an outdoor stage in the park",
                "the Apollo",
                "the Ryman",
            ],
        ),
        (
            "class",
            &[
                "pottery",
                "life drawing",
                "Spanish",
                "Italian",
                "salsa",
                "improv",
                "Japanese",
                "sign language",
                "swing dance",
                "Thai cooking",
                "jewellery making",
                "beginner piano",
                "stained glass",
                "boxing",
            ],
        ),
        (
            "class_day",
            &[
                "Tuesday evenings",
                "Thursday nights",
                "Saturday mornings",
                "Sunday afternoons",
                "Wednesdays after work",
            ],
        ),
        (
            "cause",
            &[
                "playing five-a-side",
                "on a hike",
                "slipping on black ice",
                "falling off my bike",
                "at the climbing wall",
                "carrying a sofa up three flights of stairs",
                "playing netball",
                "stepping off a kerb wrong",
                "skiing",
            ],
        ),
        (
            "wed_place",
            &[
                "in the Cotswolds",
                "on a farm outside York",
                "by Lake Como",
                "in a barn in Devon",
                "at a castle in Scotland",
                "on a beach in Cornwall",
                "in a vineyard in Portugal",
                "in a rooftop bar",
            ],
        ),
        (
            "with_comp",
            &[
                "with two friends from uni",
                "on my own",
                "with my mum",
                "with the girls from work",
                "with my running club lot",
                "with a couple of old school friends",
            ],
        ),
        (
            "fam_news",
            &[
                "just got engaged",
                "is having a baby in the spring",
                "passed {fam_her} driving test on the fourth try",
                "got into med school",
                "bought a house with {fam_her} partner",
                "is moving back home for a bit",
                "started doing stand-up, which is terrifying",
                "got a promotion",
            ],
        ),
        (
            "fam_news_elder",
            &[
                "just retired",
                "took up salsa at sixty",
                "is moving to the coast",
                "got a new hip and is already walking everywhere",
                "bought a campervan out of nowhere",
                "won the village quiz again",
            ],
        ),
        (
            "pet_trait",
            &[
                "{pet_he} stopped eating for two days",
                "{pet_he} swallowed a bit of string",
                "{pet_he} kept sneezing",
                "{pet_he} hurt a paw somehow",
            ],
        ),
        (
            "long_ago",
            &[
                "a couple of years ago",
                "back in 2019",
                "ages ago",
                "before the pandemic",
                "years ago",
            ],
        ),
        (
            "old_gig",
            &[
                "a call centre",
                "a pub",
                "a garden centre",
                "a cinema",
                "a cafe",
            ],
        ),
    ],
    pools: &[
        (
            "wow",
            &[
                "Wow!",
                "No way!",
                "Oh nice!",
                "Amazing!",
                "Ooh!",
                "That's brilliant!",
                "Wait, really?",
                "Yesss!",
                "Shut up, really?",
            ],
        ),
        (
            "aww",
            &[
                "Aww!",
                "Oh my god, cute.",
                "Stop, that's adorable.",
                "I'm melting.",
                "Aww, I love that.",
            ],
        ),
        (
            "oh_no",
            &[
                "Oh no!",
                "Ouch!",
                "Oh god.",
                "Yikes.",
                "Oh no, you poor thing.",
                "Ugh, that's awful.",
            ],
        ),
        ("haha", &["haha", "lol", "Ha!", "hahaha"]),
        (
            "ack",
            &[
                "Fair enough.",
                "Makes sense.",
                "Yeah, totally.",
                "Right?",
                "True.",
                "Honestly, same.",
            ],
        ),
        (
            "jealous",
            &[
                "So jealous.",
                "Ugh, I'm so jealous.",
                "That sounds dreamy.",
                "Take me next time!",
                "Living my dream life, I see.",
            ],
        ),
        (
            "trip_good",
            &[
                "The food was unreal and it only rained once.",
                "We walked about twenty kilometres a day and ate everything.",
                "Honestly the best holiday I've had in years.",
                "The views were ridiculous, I took four hundred photos.",
                "We found a tiny restaurant and went back three times.",
            ],
        ),
        (
            "gig_good",
            &[
                "They played for two hours and did three encores.",
                "I cried during the last song, no shame.",
                "The crowd was insane, I lost my voice.",
                "Best live show I've ever seen, genuinely.",
                "Sound was perfect and they played all the old stuff.",
            ],
        ),
        (
            "class_detail",
            &[
                "The teacher is brilliant and slightly terrifying.",
                "I was the worst in the room and didn't care at all.",
                "Everyone was lovely, I think I'll stick with it.",
                "Harder than it looks, but so fun.",
                "I came home buzzing.",
            ],
        ),
        (
            "class_callback",
            &[
                "Still terrible, still loving it.",
                "I've improved! Slightly.",
                "Missed last week but going tonight.",
                "The teacher said 'not bad' to me. Peak of my life.",
            ],
        ),
        (
            "book_opinion",
            &[
                "I couldn't put it down.",
                "The ending wrecked me.",
                "Slow start but so worth it.",
                "Best thing I've read all year.",
                "I've already lent it to two people.",
            ],
        ),
        (
            "item_detail",
            &[
                "I've used it every single day.",
                "Zero regrets, my bank account disagrees.",
                "It barely fits in the flat, but still.",
                "Best money I've spent in ages.",
            ],
        ),
        (
            "wed_detail",
            &[
                "The speeches had everyone crying.",
                "The food was amazing and the band was even better.",
                "Gorgeous day, my feet are still recovering.",
                "I caught the bouquet, so watch this space.",
            ],
        ),
        (
            "healing",
            &[
                "Much better, thanks. Still a bit stiff.",
                "Getting there! Physio says another month.",
                "Honestly fine now, just can't run yet.",
                "Sore, but I'm off the painkillers.",
            ],
        ),
        (
            "newjob_cb",
            &[
                "Honestly? Best decision I've made.",
                "Still learning everyone's names, but I like it.",
                "Tiring, but in a good way.",
                "So much better than the old place.",
            ],
        ),
        (
            "move_cb",
            &[
                "Still learning where everything is, but I love it.",
                "The flat is tiny but the area's great.",
                "Weird at first, but it's starting to feel like home.",
                "I've found a good coffee place, so I'm staying.",
            ],
        ),
        (
            "pet_settle",
            &[
                "Already runs the house.",
                "Good! Sleeps about twenty hours a day.",
                "Chewed a cable, otherwise perfect.",
                "Follows me everywhere, it's very sweet.",
            ],
        ),
        (
            "food",
            &[
                "a massive lasagne",
                "Thai green curry",
                "homemade pizza",
                "ramen",
                "a very sad salad",
                "shakshuka",
                "fish finger sandwiches",
            ],
        ),
        (
            "show",
            &[
                "that new detective show",
                "The Bear",
                "Slow Horses",
                "the baking show",
                "a terrible reality show",
                "that Danish crime drama",
            ],
        ),
    ],
    scripts: &[
        (
            Kind::Job,
            &[
                &[
                    "X|Q|How's work treating you?",
                    "O|W|Honestly exhausting. Being {a_job} at {workplace} is no joke, {job_detail}.",
                    "X|-|{oh_no} Please tell me you get a day off soon.",
                ],
                &[
                    "O|W|Long week. {job_detail_c}. The glamorous life of {a_job}.",
                    "X|-|{ack} You need a holiday.",
                ],
                &[
                    "X|Q|Are you still at {workplace}?",
                    "O|W|Yep, still {a_job} there. {job_detail_c}, so ask me again next month.",
                    "X|-|{haha}",
                ],
                &[
                    "O|W|Some days I wonder why I ever became {a_job}.",
                    "X|-|Because you're great at it!",
                    "O|-|{haha} flattery will get you everywhere.",
                ],
                &[
                    "X|Q|Remind me what you're doing at {workplace} these days?",
                    "O|W|Same as ever, I'm {a_job}. {job_detail_c}.",
                ],
            ],
        ),
        (
            Kind::City,
            &[
                &[
                    "O|W|It has not stopped raining in {city} for a week.",
                    "X|-|{haha} sounds grim.",
                ],
                &[
                    "X|QW|How's {city} treating you?",
                    "O|W|I love living here, honestly. {city} feels like home now.",
                ],
                &[
                    "O|W|A new bakery opened on my street in {city} and it's dangerous.",
                    "X|-|Dangerous how?",
                    "O|-|I've been four times this week.",
                ],
                &[
                    "X|Q|Are you still in the same flat?",
                    "O|W|Yep, same flat in {city}, same noisy neighbours.",
                    "X|-|{haha}",
                ],
                &[
                    "O|W|I've lived in {city} for {years} years and I still get lost in the centre.",
                    "X|-|{haha} classic you.",
                ],
            ],
        ),
        (
            Kind::Pet,
            &[
                &[
                    "O|W|{pet} {antic} today. Worst {species} ever.",
                    "X|-|{haha} how old is {pet_he} now?",
                    "O|-|Three, so no excuse really.",
                ],
                &[
                    "X|QW|How's {pet} doing?",
                    "O|W|Spoiled rotten. That {species} {antic2} yesterday.",
                    "X|-|{haha} of course.",
                ],
                &[
                    "O|W|Had to take my {species} {pet} to the vet, {pet_trait}.",
                    "X|-|{oh_no} Is {pet_he} okay?",
                    "O|-|Fine, just a very expensive afternoon.",
                ],
                &[
                    "O|W|Sending you a photo of {pet} looking very pleased with {pet_him}self. Best {species} in the world.",
                    "X|-|{aww}",
                ],
                &[
                    "X|QW|Who looks after the {species} when you're busy?",
                    "O|W|My neighbour pops in to feed {pet}. {pet_he_c} likes her more than me.",
                ],
            ],
        ),
        (
            Kind::Family,
            &[
                &[
                    "O|W|My {rel} {fam} {fam_news}!",
                    "X|-|{wow} Tell {fam_him} congrats from me!",
                ],
                &[
                    "X|QW|Wait, who's {fam}? I keep seeing {fam_him} in your photos.",
                    "O|W|My {rel}! {fam_he_c} {fam_news}.",
                ],
                &[
                    "O|W|Spent Sunday at {fam}'s place. My {rel} makes the best roast.",
                    "X|-|Sounds lovely.",
                ],
                &[
                    "O|W|{fam}, my {rel}, is staying with me this week, so the flat is chaos.",
                    "X|-|{haha} how long for?",
                    "O|-|Until Friday, allegedly.",
                ],
                &[
                    "X|QW|How's your {rel} doing?",
                    "O|W|{fam}? Good! {fam_he_c} {fam_news}.",
                ],
            ],
        ),
        (
            Kind::FamilyPet,
            &[
                &[
                    "X|QW|Is {fam} still obsessed with that {fam_species}?",
                    "O|W|With {fam_pet}? Completely. {fam_he_c} sends me about ten photos a day.",
                ],
                &[
                    "O|W|{fam} got a {fam_species}! {fam_he_c} named it {fam_pet}.",
                    "X|-|{aww}",
                ],
                &[
                    "O|W|I'm looking after {fam}'s {fam_species} {fam_pet} this weekend.",
                    "X|-|{haha} good luck.",
                ],
                &[
                    "X|Q|Who's that in your story?",
                    "O|W|{fam_pet}! {fam}'s {fam_species}. I'm minding it for a few days.",
                ],
            ],
        ),
        (
            Kind::Hobby,
            &[
                &[
                    "O|W|I've been obsessed with {hobby} lately, {hobby_detail}.",
                    "X|-|{haha} who even are you",
                ],
                &[
                    "X|Q|What did you get up to this weekend?",
                    "O|W|{hobby_c}, mostly. {hobby_detail_c}.",
                    "X|-|Of course.",
                ],
                &[
                    "O|W|Spent all Sunday on {hobby}. Best part of my week, honestly.",
                    "X|-|{ack}",
                ],
                &[
                    "X|QW|Still doing the {hobby} thing?",
                    "O|W|Every weekend! {hobby_detail_c}.",
                ],
                &[
                    "O|W|I think {hobby} is the only thing keeping me sane right now.",
                    "X|-|Whatever works!",
                ],
            ],
        ),
        (
            Kind::NewHobby,
            &[
                &[
                    "X|Q|What are you into these days? Still {hobby_old}?",
                    "O|W|Not really. {hobby_c} has taken over my life, {hobby_detail}.",
                ],
                &[
                    "O|W|So I've basically given up {hobby_old}. It's all {hobby} now.",
                    "X|-|Since when?",
                    "O|-|A few weeks. I'm hooked.",
                ],
                &[
                    "X|Q|Are you still doing {hobby_old}?",
                    "O|W|Nah, I stopped. I've got really into {hobby} instead, {hobby_detail}.",
                ],
                &[
                    "O|W|New obsession: {hobby}. {hobby_detail_c}. Sorry, {hobby_old}.",
                    "X|-|{haha}",
                ],
            ],
        ),
        (
            Kind::Trip,
            &[
                &[
                    "O|WTD|{when_c} I finally did the trip to {place}, {nights} nights {with_comp}.",
                    "X|-|{wow} How was it?",
                    "O|-|{trip_good}",
                ],
                &[
                    "X|QT|Weren't you away {when}? Where did you end up?",
                    "O|W|{place_c}! {with_comp_c}. {trip_good}",
                    "X|-|{jealous}",
                    "O|D|We stayed {nights} nights, which wasn't nearly enough.",
                ],
                &[
                    "O|T|Guess where I was {when}.",
                    "X|Q|No idea. Where?",
                    "O|WD|{place_c}! Just {nights} nights {with_comp}, but so worth it.",
                    "X|-|{jealous}",
                ],
                &[
                    "O|WT|Just got back from {place}! Flew out {when}.",
                    "X|C|{wow} How long were you there?",
                    "O|D|{nights_c} nights. {trip_good}",
                ],
                &[
                    "X|-|How was the holiday?? Tell me everything.",
                    "O|W|{place_c} was incredible. {trip_good}",
                    "X|Q|{jealous} When did you go again?",
                    "O|TD|We flew out {when} and stayed {nights} nights.",
                ],
            ],
        ),
        (
            Kind::Adopt,
            &[
                &[
                    "O|WT|We adopted a {young} {when}!! {pet_he_c}'s called {pet}.",
                    "X|-|{aww} I need photos immediately.",
                    "O|-|Incoming!",
                ],
                &[
                    "O|T|{when_c} I went to the rescue centre 'just to look'...",
                    "X|Q|Oh no. How many did you come home with?",
                    "O|W|Just one! A {young} called {pet}. Look at this face.",
                ],
                &[
                    "X|QW|Wait, whose {species} is that in your story?",
                    "O|WT|Mine!! I adopted {pet_him} {when}. {pet_he_c}'s called {pet}.",
                ],
                &[
                    "O|WT|Meet {pet}, the newest member of the family. Picked {pet_him} up from the shelter {when}.",
                    "X|Q|{aww} What is {pet_he}?",
                    "O|W|{breed_young_c}, about ten weeks old.",
                ],
                &[
                    "O|WT|So... I got a {species}. {when_c}. {pet_he_c}'s called {pet} and already owns the sofa.",
                    "X|-|{haha} I knew you'd crack eventually.",
                ],
            ],
        ),
        (
            Kind::Concert,
            &[
                &[
                    "O|WTD|Saw {band} at {venue} {when}. I'm still not over it.",
                    "X|-|{jealous} Were they good?",
                    "O|-|{gig_good}",
                ],
                &[
                    "X|QT|What did you end up doing {when}?",
                    "O|W|Went to see {band}! {gig_good}",
                    "X|-|{wow}",
                ],
                &[
                    "O|T|Went to something {when} and my ears are still ringing.",
                    "X|Q|Ooh, what?",
                    "O|WD|{band}, at {venue}! Practically front row.",
                    "X|-|{jealous}",
                ],
                &[
                    "O|WT|{when_c} I finally saw {band} live.",
                    "X|C|Where was it?",
                    "O|D|{venue_c}. {gig_good}",
                ],
                &[
                    "X|Q|Did you get tickets in the end?",
                    "O|WTD|I did! {band}, {when}, at {venue}. {gig_good}",
                ],
            ],
        ),
        (
            Kind::Class,
            &[
                &[
                    "O|WT|I started a {class} class {when}!",
                    "X|-|{wow} How was the first one?",
                    "O|-|{class_detail}",
                ],
                &[
                    "X|Q|Didn't you sign up for something? A class?",
                    "O|WT|Yes! {class_c}, on {class_day}. First session was {when}.",
                ],
                &[
                    "O|T|So I did a scary thing {when}.",
                    "X|Q|What kind of scary?",
                    "O|W|Went to my first {class} class. {class_detail}",
                ],
                &[
                    "O|WT|I start a {class} class {when_future}, wish me luck.",
                    "X|-|Ooh, good luck! Report back.",
                ],
                &[
                    "O|W|I signed up for {class} lessons on {class_day}.",
                    "X|Q|When do they start?",
                    "O|T|{when_future_c}! I'm nervous.",
                ],
            ],
        ),
        (
            Kind::Race,
            &[
                &[
                    "X|Q|What was the medal for in your photo?",
                    "O|WTD|{race_c} {when}! {finish}, and I didn't walk once.",
                ],
                &[
                    "O|WTD|Ran {race} {when}. {finish}, a new PB!",
                    "X|-|{wow} You absolute machine.",
                ],
                &[
                    "X|QTW|How did {race} go {when}?",
                    "O|DW|{finish}! Legs are dead but I'm happy.",
                    "X|-|Amazing, well done!",
                ],
                &[
                    "O|T|Guess what I did {when}.",
                    "X|Q|Go on?",
                    "O|WD|Ran {race}! Finished in {finish}.",
                ],
                &[
                    "O|WT|I did {race} {when}!",
                    "X|C|And?? What was your time?",
                    "O|D|{finish}. Five minutes faster than last year!",
                ],
            ],
        ),
        (
            Kind::Injury,
            &[
                &[
                    "O|WTD|Well. {when_c} I {said} {cause}. Everything hurts.",
                    "X|-|{oh_no} Please tell me you're resting.",
                    "O|-|Trying to. I'm a terrible patient.",
                ],
                &[
                    "O|WTD|I {said} {when}, {cause}.",
                    "X|-|{oh_no} Are you okay?",
                    "O|-|I'll live. Lots of ice and self-pity.",
                ],
                &[
                    "X|Q|Why is there a bandage in your photo?!",
                    "O|WTD|I {said} {when}. {cause_c}, like an idiot.",
                ],
                &[
                    "O|WT|Bad news: I {said} {when}.",
                    "X|C|{oh_no} How?",
                    "O|D|{cause_c}. Don't laugh.",
                ],
                &[
                    "O|T|So I had a bit of a disaster {when}.",
                    "X|Q|Uh oh, what happened?",
                    "O|WD|I {said} {cause}.",
                ],
            ],
        ),
        (
            Kind::Wedding,
            &[
                &[
                    "X|QT|Whose wedding was it {when}? I saw the photos.",
                    "O|WD|{whose_c}! {wed_place_c}, and it was perfect.",
                ],
                &[
                    "O|WTD|{when_c} was {whose} wedding {wed_place}. I danced until 2am.",
                    "X|-|{aww} How was it?",
                    "O|-|{wed_detail}",
                ],
                &[
                    "X|QT|How was the wedding {when}?",
                    "O|WD|Gorgeous! {whose_c} wedding was {wed_place} and it didn't rain once.",
                ],
                &[
                    "O|T|I'm still recovering from the party {when}.",
                    "X|Q|What party?",
                    "O|WD|{whose_c} wedding! {wed_place_c}, open bar, you can imagine.",
                ],
                &[
                    "O|WT|I gave a reading at {whose} wedding {when}. My hands were shaking.",
                    "X|-|{aww} I bet you were great.",
                ],
            ],
        ),
        (
            Kind::Purchase,
            &[
                &[
                    "O|WT|Small update: I now own {item}. Bought it {when}, no regrets.",
                    "X|-|{haha} of course you do.",
                ],
                &[
                    "O|WT|I did something reckless {when}: I bought {item}.",
                    "X|-|{haha} No regrets?",
                    "O|-|{item_detail}",
                ],
                &[
                    "X|Q|What's that in the background of your photo?",
                    "O|WT|My new baby! {item_c}, bought it {when}.",
                ],
                &[
                    "O|WT|{when_c} I finally caved and bought {item}.",
                    "X|-|About time, you've been talking about it for months.",
                ],
                &[
                    "O|T|My bank account has been crying since I went shopping {when}.",
                    "X|Q|Uh oh. What did you buy?",
                    "O|W|{item_c}. {item_detail}",
                ],
            ],
        ),
        (
            Kind::Book,
            &[
                &[
                    "O|W|Just finished {book}. I'm emotionally wrecked.",
                    "X|-|Is that the {author} one?",
                    "O|-|Yep. Read it, seriously.",
                ],
                &[
                    "X|Q|Read anything good lately?",
                    "O|W|{book} by {author}. {book_opinion}",
                    "X|-|Adding it to the list.",
                ],
                &[
                    "O|W|You HAVE to read {book}. {book_opinion}",
                    "X|-|You say that about every book {haha}",
                ],
                &[
                    "O|WT|Stayed up until 3am {when} finishing {book}.",
                    "X|-|Worth it?",
                    "O|-|{book_opinion}",
                ],
                &[
                    "O|W|Book club picked {book} by {author} and I'm actually enjoying it.",
                    "X|-|{ack}",
                ],
            ],
        ),
        (
            Kind::NewJob,
            &[
                &[
                    "X|Q|Any news on the job front?",
                    "O|WT|Yes! I've left {old_workplace}. I'm {a_job2} at {workplace2} now, started {when}.",
                ],
                &[
                    "O|WT|Big news: I handed in my notice at {old_workplace}. I start as {a_job2} at {workplace2} {when_future}!",
                    "X|-|{wow} Congratulations!!",
                ],
                &[
                    "X|Q|So?? How's the new job going?",
                    "O|WT|Good! {workplace2_c} is so different from {old_workplace}. Being {a_job2} suits me. I started {when}.",
                ],
                &[
                    "O|WT|I left {old_workplace}! Started at {workplace2} {when}.",
                    "X|Q|Wait what?! Doing what?",
                    "O|W|I'm {a_job2} now. Still feels weird to say.",
                ],
                &[
                    "O|T|Remember that interview? I got it! First day was {when}.",
                    "X|Q|No way! Where was it again?",
                    "O|W|{workplace2_c}, as {a_job2}. Bye bye {old_workplace}.",
                ],
            ],
        ),
        (
            Kind::Move,
            &[
                &[
                    "X|Q|Where are you living these days? I've lost track.",
                    "O|WT|{city2}! Moved {when}. {city_old} feels like ages ago.",
                ],
                &[
                    "O|WT|Officially living in {city2}! Moved in {when}, boxes everywhere.",
                    "X|-|{wow} How does it feel to leave {city_old}?",
                    "O|-|Weird. But good weird.",
                ],
                &[
                    "X|Q|Did the move happen?",
                    "O|WT|Yes! Moved to {city2} {when}. Still living out of boxes.",
                ],
                &[
                    "O|WT|We moved {when}. {city_old} to {city2} in one very long van ride.",
                    "X|-|{oh_no} Sounds exhausting.",
                ],
                &[
                    "O|T|Sorry I've been quiet, we moved {when}.",
                    "X|Q|Oh right! How's the new place?",
                    "O|W|Tiny but I love it. {city2} is going to be good for me.",
                ],
            ],
        ),
    ],
    distractors: &[
        (
            Kind::Job,
            &[
                &["X|-|My cousin {fname} is {a_job} too and says exactly the same thing."],
                &[
                    "O|-|Back in uni I worked in {old_gig} for two summers and I still have nightmares.",
                ],
                &["X|-|I nearly applied to {workplace} once, you know."],
                &["T|-|{fname} from my old team just quit to become {a_job2x}. Brave."],
                &["X|-|Honestly I couldn't be {a_job}. I'd last a day."],
            ],
        ),
        (
            Kind::City,
            &[
                &["X|-|My brother's thinking of moving to {city}, any tips?"],
                &["O|-|{fname} from work just moved to {city2x} and won't shut up about it."],
                &["X|-|We nearly moved to {city2x} years ago."],
                &["T|-|I grew up in {city2x}, it's lovely in summer."],
            ],
        ),
        (
            Kind::Pet,
            &[
                &["X|-|My neighbour's {species} {pet2} got out again and ate someone's sandwich."],
                &["O|-|{fname} has a {species} called {pet2} now, it's the size of a cushion."],
                &["X|-|We had a {species} called {pet2} growing up. Best {species} ever."],
                &["T|-|My neighbour's {species} {pet2} is the laziest animal alive."],
            ],
        ),
        (
            Kind::Family,
            &[
                &["X|-|My {rel2} is the opposite, never calls."],
                &[
                    "O|-|{fname}'s {rel} is getting married next month, it's all anyone talks about.",
                ],
                &["X|-|Your {rel} and my {rel2} would get on so well."],
            ],
        ),
        (
            Kind::Hobby,
            &[
                &["X|-|I tried {hobby} once and hurt myself immediately."],
                &["O|-|{fname} keeps trying to get me into {hobby2}, not happening."],
                &["X|-|My dad's just got into {hobby2}, it's all he talks about."],
            ],
        ),
        (
            Kind::NewHobby,
            &[
                &["X|-|I did {hobby2} for about a week once."],
                &["X|-|{fname} is doing {hobby2} now too, everyone's got a new hobby."],
            ],
        ),
        (
            Kind::Trip,
            &[
                &["X|S|We did {place2} {long_ago} and I still dream about the food."],
                &["O|-|{fname} is off to {place2} next month, so I've heard about nothing else."],
                &[
                    "X|-|I've always wanted to go to {place2}.",
                    "O|-|You should! Next year?",
                ],
                &["T|-|My parents just got back from {place2}, they loved it."],
            ],
        ),
        (
            Kind::Adopt,
            &[
                &["X|-|{fname} adopted a {young} too, it ate their shoes in the first week."],
                &["X|-|I keep looking at {species} adoption pages at 2am."],
                &["T|-|My flatmate's {species} {pet2} would love a friend."],
            ],
        ),
        (
            Kind::Concert,
            &[
                &["X|-|I had tickets for {band2} last year and got food poisoning the day before."],
                &["O|-|{fname} is seeing {band2} next week, so jealous."],
                &["X|S|The last gig I went to was {band2} {long_ago}. I'm old."],
            ],
        ),
        (
            Kind::Class,
            &[
                &["X|S|I did a {class2} class once. Never again."],
                &["O|-|{fname} teaches a {class2} class on Thursdays, I might try it."],
                &["X|-|My mum is doing {class2} lessons, she's better than me at everything now."],
            ],
        ),
        (
            Kind::Race,
            &[
                &["X|-|{fname} is training for {race2} and is unbearable about it."],
                &["X|S|I ran {race2} {long_ago} and walked half of it."],
                &["T|-|My cousin did {race2} in fancy dress."],
            ],
        ),
        (
            Kind::Injury,
            &[
                &["X|-|My dad {dad_injury} {cause2} last year and moaned for months."],
                &["X|S|I {said2} {long_ago}, it takes forever to heal."],
                &["X|-|My brother {dad_injury} last winter, it took ages to heal."],
            ],
        ),
        (
            Kind::Wedding,
            &[
                &["X|-|My cousin's wedding is next spring and I'm already dreading the speeches."],
                &[
                    "O|-|{fname} is getting married {wed_place2} next year, and somehow I'm in the wedding party again.",
                ],
                &["X|S|I haven't been to a wedding since {long_ago}."],
            ],
        ),
        (
            Kind::Purchase,
            &[
                &["X|-|I've been thinking about buying {item2} for ages."],
                &["O|-|{fname} bought {item2} and never used it once."],
                &["T|-|My flatmate keeps {item2} in the hallway and it's a hazard."],
            ],
        ),
        (
            Kind::Book,
            &[
                &["X|-|I couldn't get into {book2}, even though everyone says it's amazing."],
                &["O|-|{fname} lent me {book2} but I haven't started it."],
                &["X|-|Our book club did {book2} last month and nobody finished it."],
            ],
        ),
        (
            Kind::NewJob,
            &[
                &["X|-|I'd love to work somewhere like {workplace2x}, honestly."],
                &["X|-|I had an interview at {workplace2x} {long_ago} and totally bombed it."],
            ],
        ),
        (
            Kind::Move,
            &[
                &["X|-|My landlord's putting the rent up again, I might have to move too."],
                &["X|-|{fname} moved to {city2x} last year and loves it."],
            ],
        ),
    ],
    callbacks: &[
        (
            Kind::Class,
            &[
                &["X|R|How's {class} going?", "O|-|{class_callback}"],
                &[
                    "X|R|Are you still doing {class} on {class_day}?",
                    "O|-|{class_callback}",
                ],
            ],
        ),
        (
            Kind::Injury,
            &[
                &["X|R|How's the {body}?", "O|-|{healing}"],
                &["X|R|Is your {body} any better?", "O|-|{healing}"],
            ],
        ),
        (
            Kind::NewJob,
            &[
                &["X|R|How's life at {workplace2}?", "O|-|{newjob_cb}"],
                &["X|R|Settling in okay at {workplace2}?", "O|-|{newjob_cb}"],
            ],
        ),
        (
            Kind::Move,
            &[
                &["X|R|How are you finding {city2}?", "O|-|{move_cb}"],
                &[
                    "X|R|Do you miss {city_old} at all, now you're in {city2}?",
                    "O|-|{move_cb}",
                ],
            ],
        ),
        (
            Kind::Adopt,
            &[
                &["X|R|How's {pet} settling in?", "O|-|{pet_settle}"],
                &["X|R|Is {pet} behaving yet?", "O|-|{pet_settle}"],
            ],
        ),
        (
            Kind::Trip,
            &[
                &[
                    "X|R|I'm still thinking about your {place} photos.",
                    "O|-|Don't, I want to go back.",
                ],
                &[
                    "X|R|Still got the {place} holiday blues?",
                    "O|-|Constantly.",
                ],
            ],
        ),
        (
            Kind::Race,
            &[
                &[
                    "X|R|Have your legs recovered from {race} yet?",
                    "O|-|Just about!",
                ],
                &[
                    "X|R|Are you signing up for another one after {race}?",
                    "O|-|Maybe! Don't tell my knees.",
                ],
            ],
        ),
        (
            Kind::Purchase,
            &[
                &[
                    "X|R|Are you still in love with the {short}?",
                    "O|-|{item_detail}",
                ],
                &["X|R|How's the new {short}?", "O|-|{item_detail}"],
            ],
        ),
    ],
    greetings: &[
        &[
            "O|-|Hey {nick}! How's your week going?",
            "X|-|Hey! Busy, but good. You?",
        ],
        &[
            "O|-|Hiii, you around?",
            "X|-|Yep, just got home. What's up?",
        ],
        &[
            "O|-|Long time no chat!",
            "X|-|I know, sorry, life has been chaos.",
        ],
        &["O|-|Morning! Got a sec?", "X|-|Always. What's happening?"],
        &[
            "O|-|Oi, you've gone quiet on me.",
            "X|-|I'm here! Just been swamped.",
        ],
        &[
            "O|-|Evening {nick}!",
            "X|-|Hey you! Perfect timing, I was about to message.",
        ],
        &[
            "O|-|How are you doing?",
            "X|-|Surviving! Tell me your news.",
        ],
        &["O|-|Are you alive?", "X|-|Barely, but yes. How are you?"],
        &[
            "O|-|Hey, quick catch-up?",
            "X|-|Go on then, I've got ten minutes.",
        ],
        &[
            "O|-|Guess who finally has a free evening.",
            "X|-|Not me, but I'll take a chat!",
        ],
    ],
    closings: &[
        &[
            "O|-|Right, I need to make dinner. Talk soon!",
            "X|-|Byeee, speak soon!",
        ],
        &["O|-|Okay, bedtime for me. Night!", "X|-|Night night!"],
        &["O|-|Gotta run, chat later!"],
        &[
            "X|-|I have to go, but this was nice. Let's not leave it so long next time.",
            "O|-|Deal!",
        ],
        &[
            "O|-|Anyway, I'd better get back to it. Speak soon x",
            "X|-|x",
        ],
        &["X|-|Okay my train's here, talk later!", "O|-|Safe travels!"],
        &["O|-|Right, my battery's dying. Speak soon!", "X|-|Bye!"],
        &[
            "X|-|I'm falling asleep mid-sentence, night!",
            "O|-|Sleep well!",
        ],
        &["O|-|Off to the shops before they shut, chat soon."],
    ],
    third_hello: &[
        &["T|-|Hello hello, mind if I gatecrash?", "O|-|Course not!"],
        &[
            "T|-|Hi both! Thanks for adding me.",
            "O|-|Welcome to the chaos.",
        ],
        &[
            "T|-|I'm here, what did I miss?",
            "X|-|Nothing yet, you're just in time.",
        ],
    ],
    small_talk: &[
        &[
            "O|-|Ugh, this week has been so long.",
            "X|-|Tell me about it. Is it Friday yet?",
        ],
        &[
            "O|-|Have you been watching {show}?",
            "X|-|Yes! No spoilers, I'm two episodes behind.",
        ],
        &[
            "O|-|Made {food} tonight and it actually worked.",
            "X|-|Look at you, chef.",
        ],
        &[
            "O|-|I need to sleep for about a week.",
            "X|-|Same. Early night?",
            "O|-|Ha, I wish.",
        ],
        &[
            "X|-|Random question but what are you having for dinner?",
            "O|-|{food_c}. You?",
            "X|-|Cereal, don't judge.",
        ],
        &[
            "O|-|The weather is so weird at the moment.",
            "X|-|I wore a coat and sunglasses today.",
        ],
        &[
            "O|-|I've started drinking way too much coffee again.",
            "X|-|Three cups, or three cups before ten?",
            "O|-|...the second one.",
        ],
        &["O|-|My phone screen cracked again.", "X|-|{oh_no} Again??"],
        &[
            "X|-|Miss you, by the way.",
            "O|-|Miss you too! We need a proper catch-up soon.",
        ],
        &[
            "O|-|Honestly I've just been so tired lately.",
            "X|-|Are you sleeping okay?",
            "O|-|Not really, but I'll survive.",
        ],
        &[
            "O|-|Tried that new brunch place by the station.",
            "X|-|Verdict?",
            "O|-|Overpriced eggs, amazing coffee.",
        ],
        &[
            "O|-|The laundry mountain has reached new heights.",
            "X|-|{haha} same here.",
        ],
        &[
            "X|-|What are you up to this evening?",
            "O|-|Absolutely nothing and I can't wait.",
        ],
        &[
            "O|-|I think I'm getting a cold.",
            "X|-|Honey, lemon and bed. Doctor's orders.",
        ],
        &[
            "O|-|Sorry I was slow to reply, busy day.",
            "X|-|No worries at all!",
        ],
        &[
            "O|-|Can you believe it's nearly the end of the month already?",
            "X|-|Time isn't real.",
        ],
        &[
            "O|-|I accidentally watched six episodes of {show} last night.",
            "X|-|Only six? Amateur.",
        ],
        &[
            "X|-|Did you ever sort out that thing with your landlord?",
            "O|-|Sort of. He's fixing the boiler 'next week'. Again.",
        ],
        &[
            "O|-|Quick rant: people who walk slowly four abreast.",
            "X|-|The worst. Absolutely the worst.",
        ],
        &[
            "O|-|I've been trying to drink more water.",
            "X|-|How's that going?",
            "O|-|I've had one glass today.",
        ],
        &[
            "O|-|I finally booked the dentist.",
            "X|-|Proud of you, genuinely.",
        ],
        &[
            "X|-|Have you heard that song everyone's playing?",
            "O|-|It's stuck in my head permanently now, thanks.",
        ],
        &[
            "O|-|Grocery prices are a joke lately.",
            "X|-|I paid four quid for butter.",
        ],
        &[
            "O|-|My delivery took two hours tonight.",
            "X|-|{oh_no} Did it at least turn up?",
            "O|-|Stone cold.",
        ],
        &[
            "X|-|Are you free at all next weekend?",
            "O|-|Maybe? Let me check and get back to you.",
        ],
        &[
            "O|-|Why is every group chat so loud today?",
            "X|-|{haha} muted them all.",
        ],
        &[
            "O|-|I cleaned the whole flat and it already looks messy again.",
            "X|-|The eternal struggle.",
        ],
        &[
            "X|-|Saw a video that made me cry laughing, sending it now.",
            "O|-|Send send send.",
        ],
        &[
            "O|-|I'm going to start going to bed earlier.",
            "X|-|You've said that every week for three years.",
        ],
        &[
            "O|-|Is it just me or is everyone exhausted at the moment?",
            "X|-|It's not just you.",
        ],
        &["O|-|Anyway, enough about that."],
        &["X|-|Okay, random thought: we should do a games night soon."],
        &["O|-|Ugh, someone upstairs is drilling again."],
        &["X|-|Sorry, my phone keeps dying, so if I vanish that's why."],
        &["O|-|Just spilled tea all over my desk, one sec."],
        &["X|-|Currently eating crisps for dinner. Living the dream."],
        &["O|-|It's actually sunny today, I'm in shock."],
        &["X|-|Just got in from work, I'm shattered."],
        &["O|-|Hang on, someone's at the door."],
        &["X|-|I should be cleaning but here I am."],
    ],
    backchannels: &[
        "haha",
        "Ha, fair.",
        "Yeah.",
        "Mm.",
        "lol",
        "Right.",
        "Haha yes.",
        "True.",
        "Ha!",
        "Yep.",
    ],
    phrases: &[
        (
            Kind::Trip,
            phr("go to {place}", "went to {place}", "going to {place}"),
        ),
        (
            Kind::Adopt,
            phr("adopt {pet}", "adopted {pet}", "adopting {pet}"),
        ),
        (
            Kind::Concert,
            phr("see {band} live", "saw {band} live", "seeing {band} live"),
        ),
        (
            Kind::Class,
            phr(
                "start {her} {class} class",
                "started {her} {class} class",
                "starting {her} {class} class",
            ),
        ),
        (
            Kind::Race,
            phr("run {race}", "ran {race}", "running {race}"),
        ),
        (Kind::Injury, phr("{inj_base}", "{inj_past}", "{inj_ger}")),
        (
            Kind::Wedding,
            phr(
                "go to {whose_q} wedding",
                "went to {whose_q} wedding",
                "going to {whose_q} wedding",
            ),
        ),
        (
            Kind::Purchase,
            phr("buy {item_the}", "bought {item_the}", "buying {item_the}"),
        ),
        (
            Kind::Book,
            phr("finish {book}", "finished {book}", "finishing {book}"),
        ),
        (
            Kind::NewJob,
            phr(
                "start at {workplace2}",
                "started at {workplace2}",
                "starting at {workplace2}",
            ),
        ),
        (
            Kind::Move,
            phr("move to {city2}", "moved to {city2}", "moving to {city2}"),
        ),
    ],
    asks: ASKS,
    when_plain: &[
        "When did {name} {base}?",
        "What date did {name} {base}?",
        "When exactly did {name} {base}?",
    ],
    multi: &[
        (
            Multi::First,
            &[
                "Which came first for {name}: {ger_a} or {ger_b}?",
                "What did {name} do first, {ger_a} or {ger_b}?",
            ],
        ),
        (
            Multi::CityAt,
            &[
                "Which city was {name} living in when {she} {past}?",
                "Where did {name} live at the time {she} {past}?",
            ],
        ),
        (
            Multi::JobAt,
            &[
                "What was {name}'s job when {she} {past}?",
                "What did {name} do for a living when {she} {past}?",
            ],
        ),
        (
            Multi::FamPet,
            &[
                "What is the name of {name}'s {rel}'s {fam_species}?",
                "What is {name}'s {rel}'s {fam_species} called?",
            ],
        ),
        (
            Multi::BeforeJob,
            &[
                "What did {name} do for work before {she} started at {workplace2}?",
                "What was {name}'s job before joining {workplace2}?",
            ],
        ),
        (
            Multi::PetFirst,
            &[
                "Which pet has {name} had longer, {pet_a} or {pet_b}?",
                "Did {name} get {pet_a} or {pet_b} first?",
            ],
        ),
        (
            Multi::PetCount,
            &[
                "How many pets does {name} have now?",
                "How many animals does {name} have at home these days?",
            ],
        ),
        (
            Multi::AfterJobMove,
            &[
                "What city did {name} move to after leaving {old_workplace}?",
                "Where did {name} move after quitting {old_workplace}?",
            ],
        ),
    ],
};

const ASKS: &[Ask] = &[
    (
        Kind::Job,
        Mode::What,
        &[
            "What does {name} do for a living?",
            "What is {name}'s job?",
            "What does {name} work as?",
        ],
        &[
            "What is {alias}'s profession?",
            "How does {alias} earn money?",
            "What occupation does {alias} have?",
        ],
    ),
    (
        Kind::City,
        Mode::What,
        &[
            "Which city does {name} live in?",
            "Where does {name} live?",
            "What city is {name} based in?",
        ],
        &[
            "In which town does {alias} reside?",
            "Where is {alias}'s home base?",
        ],
    ),
    (
        Kind::Pet,
        Mode::What,
        &[
            "What is the name of {name}'s {species}?",
            "What is {name}'s {species} called?",
            "What did {name} name {her} {species}?",
        ],
        &[
            "What is {alias}'s animal called?",
            "What name did {alias} give {her} animal companion?",
        ],
    ),
    (
        Kind::Family,
        Mode::What,
        &[
            "What is the name of {name}'s {rel}?",
            "What is {name}'s {rel} called?",
            "Who is {name}'s {rel}?",
        ],
        &[],
    ),
    (
        Kind::Hobby,
        Mode::What,
        &[
            "What hobby is {name} into?",
            "What does {name} do in {her} spare time?",
            "What is {name}'s hobby?",
        ],
        &[
            "How does {alias} like to unwind?",
            "What pastime keeps {alias} busy?",
        ],
    ),
    (
        Kind::Trip,
        Mode::What,
        &[
            "Where did {name} go on holiday?",
            "Which place did {name} visit on {her} recent trip?",
            "Where did {name} travel to?",
        ],
        &[
            "Which destination did {alias} fly off to?",
            "What spot did {alias} visit while away?",
            "Where was {alias}'s vacation?",
        ],
    ),
    (
        Kind::Trip,
        Mode::Detail,
        &[
            "How many nights did {name} spend in {place}?",
            "How long was {name}'s trip to {place}?",
        ],
        &[],
    ),
    (
        Kind::Trip,
        Mode::When,
        &[],
        &[
            "When did {alias} head off on vacation?",
            "On what day did {alias} leave for a getaway?",
        ],
    ),
    (
        Kind::Adopt,
        Mode::What,
        &[
            "What is the name of the {young} {name} adopted?",
            "What did {name} call the {young} {she} adopted?",
            "What kind of animal did {name} adopt?",
        ],
        &[
            "What did {alias} name {her} new rescue animal?",
            "Which creature did {alias} take in?",
        ],
    ),
    (
        Kind::Adopt,
        Mode::When,
        &[],
        &[
            "When did {alias} take in a new animal?",
            "When did {alias} welcome a rescue animal home?",
        ],
    ),
    (
        Kind::Concert,
        Mode::What,
        &[
            "Which band did {name} see live?",
            "Who did {name} see in concert?",
            "Which artist's gig did {name} go to?",
        ],
        &[
            "Which musicians did {alias} watch perform?",
            "Whose show did {alias} catch on stage?",
        ],
    ),
    (
        Kind::Concert,
        Mode::Detail,
        &[
            "Where did {name} see {band}?",
            "At which venue did {name} see {band}?",
        ],
        &[],
    ),
    (
        Kind::Concert,
        Mode::When,
        &[],
        &[
            "When did {alias} watch a live performance?",
            "On what day did {alias} catch a show?",
        ],
    ),
    (
        Kind::Class,
        Mode::What,
        &[
            "What class did {name} sign up for?",
            "What kind of class did {name} start?",
            "What is {name} learning in {her} new class?",
        ],
        &[
            "What new skill is {alias} learning?",
            "What course did {alias} enrol on?",
        ],
    ),
    (
        Kind::Class,
        Mode::When,
        &[],
        &[
            "When did {alias} begin the new course?",
            "On what day did {alias} begin taking lessons?",
        ],
    ),
    (
        Kind::Race,
        Mode::What,
        &[
            "Which race did {name} run?",
            "What race did {name} take part in?",
        ],
        &[
            "Which running event did {alias} enter?",
            "What competition did {alias} complete?",
        ],
    ),
    (
        Kind::Race,
        Mode::Detail,
        &[
            "What was {name}'s finishing time in {race}?",
            "How fast did {name} run {race}?",
        ],
        &[],
    ),
    (
        Kind::Race,
        Mode::When,
        &[],
        &[
            "When did {alias} compete in a running event?",
            "On what day did {alias} take part in a road event?",
        ],
    ),
    (
        Kind::Injury,
        Mode::What,
        &["What injury did {name} get?", "What did {name} hurt?"],
        &["Which body part did {alias} damage?"],
    ),
    (
        Kind::Injury,
        Mode::Detail,
        &[
            "How did {name} {inj_base}?",
            "What was {name} doing when {she} {inj_past}?",
        ],
        &[
            "What caused {alias}'s accident?",
            "How did {alias} get hurt?",
        ],
    ),
    (
        Kind::Injury,
        Mode::When,
        &[],
        &[
            "When did {alias} get hurt?",
            "On what day was {alias} injured?",
        ],
    ),
    (
        Kind::Wedding,
        Mode::What,
        &[
            "Whose wedding did {name} go to?",
            "Whose wedding was {name} at?",
        ],
        &[
            "Whose big day did {alias} attend?",
            "Which couple did {alias} watch get hitched?",
        ],
    ),
    (
        Kind::Wedding,
        Mode::Detail,
        &[
            "Where was the wedding {name} went to?",
            "Where was {whose_q} wedding held?",
        ],
        &[],
    ),
    (
        Kind::Wedding,
        Mode::When,
        &[],
        &["On what day did {alias} attend a marriage ceremony?"],
    ),
    (
        Kind::Purchase,
        Mode::What,
        &[
            "What did {name} buy?",
            "What did {name} splash out on?",
            "What big purchase did {name} make?",
        ],
        &[
            "What did {alias} spend a lot of money on?",
            "What pricey thing did {alias} get?",
        ],
    ),
    (
        Kind::Purchase,
        Mode::When,
        &[],
        &[
            "When did {alias} make a big purchase?",
            "On what day did {alias} splash out?",
        ],
    ),
    (
        Kind::Book,
        Mode::What,
        &[
            "Which book did {name} recommend?",
            "What book did {name} finish?",
            "What was {name} reading?",
        ],
        &[
            "Which novel did {alias} rave about?",
            "What title did {alias} get through recently?",
        ],
    ),
    (
        Kind::Book,
        Mode::When,
        &[],
        &["When did {alias} reach the final page of a novel?"],
    ),
    (
        Kind::NewJob,
        Mode::Updated,
        &[
            "Where does {name} work now?",
            "What is {name}'s current job?",
            "What does {name} do for work these days?",
        ],
        &[
            "Who employs {alias} at present?",
            "What is {alias}'s profession at the moment?",
        ],
    ),
    (
        Kind::NewJob,
        Mode::When,
        &[],
        &["When did {alias} switch employers?"],
    ),
    (
        Kind::Move,
        Mode::Updated,
        &[
            "Where does {name} live now?",
            "Which city is {name} living in these days?",
            "What city is {name} based in now?",
        ],
        &[
            "In which town does {alias} reside at present?",
            "Where is {alias}'s home base these days?",
        ],
    ),
    (
        Kind::Move,
        Mode::When,
        &[],
        &[
            "When did {alias} relocate?",
            "On what day did {alias} change address?",
        ],
    ),
    (
        Kind::NewHobby,
        Mode::Updated,
        &[
            "What hobby is {name} into these days?",
            "What does {name} do for fun now?",
        ],
        &[
            "Which pastime occupies {alias} at the moment?",
            "How does {alias} unwind lately?",
        ],
    ),
];
