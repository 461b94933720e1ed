-- Switchyard demo HR database (deterministic sample data; all people are fictional).
-- Works on SQLite and PostgreSQL.

DROP TABLE IF EXISTS salaries;
DROP TABLE IF EXISTS employees;
DROP TABLE IF EXISTS departments;

CREATE TABLE departments (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    location TEXT NOT NULL,
    budget INTEGER NOT NULL
);

CREATE TABLE employees (
    id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    department_id INTEGER NOT NULL REFERENCES departments(id),
    title TEXT NOT NULL,
    hire_date TEXT NOT NULL,          -- YYYY-MM-DD
    manager_id INTEGER REFERENCES employees(id)
);

CREATE TABLE salaries (
    employee_id INTEGER NOT NULL REFERENCES employees(id),
    amount INTEGER NOT NULL,          -- annual, whole currency units
    currency TEXT NOT NULL,
    effective_date TEXT NOT NULL      -- YYYY-MM-DD; one current salary row per employee
);

-- Departments (id, name, location, budget)
INSERT INTO departments (id, name, location, budget) VALUES (1, 'Engineering', 'San Francisco', 4500000);
INSERT INTO departments (id, name, location, budget) VALUES (2, 'Sales', 'New York', 2800000);
INSERT INTO departments (id, name, location, budget) VALUES (3, 'Marketing', 'New York', 1600000);
INSERT INTO departments (id, name, location, budget) VALUES (4, 'Finance', 'Chicago', 1200000);
INSERT INTO departments (id, name, location, budget) VALUES (5, 'HR', 'Chicago', 750000);
INSERT INTO departments (id, name, location, budget) VALUES (6, 'Operations', 'Austin', 2100000);

-- Engineering (14 employees)
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (1, 'Alice', 'Okafor', 'alice.okafor@example.com', 1, 'VP of Engineering', '2015-06-12', NULL);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (2, 'Bob', 'Davis', 'bob.davis@example.com', 1, 'Engineering Manager', '2021-11-23', 1);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (3, 'Carol', 'Taylor', 'carol.taylor@example.com', 1, 'Staff Software Engineer', '2019-04-06', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (4, 'David', 'Allen', 'david.allen@example.com', 1, 'Senior Software Engineer', '2017-09-17', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (5, 'Emma', 'Nelson', 'emma.nelson@example.com', 1, 'Senior Software Engineer', '2024-02-28', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (6, 'Frank', 'Phillips', 'frank.phillips@example.com', 1, 'Senior Software Engineer', '2022-07-11', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (7, 'Grace', 'Stewart', 'grace.stewart@example.com', 1, 'Senior Software Engineer', '2020-12-22', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (8, 'Henry', 'Cooper', 'henry.cooper@example.com', 1, 'Software Engineer', '2018-05-05', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (9, 'Isabel', 'Garcia', 'isabel.garcia@example.com', 1, 'Software Engineer', '2016-10-16', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (10, 'Jack', 'Lopez', 'jack.lopez@example.com', 1, 'Software Engineer', '2023-03-27', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (11, 'Karen', 'Thompson', 'karen.thompson@example.com', 1, 'Software Engineer', '2021-08-10', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (12, 'Liam', 'Lewis', 'liam.lewis@example.com', 1, 'Software Engineer', '2019-01-21', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (13, 'Maria', 'Scott', 'maria.scott@example.com', 1, 'QA Engineer', '2017-06-04', 2);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (14, 'Noah', 'Campbell', 'noah.campbell@example.com', 1, 'DevOps Engineer', '2024-11-15', 1);

-- Sales (12 employees)
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (15, 'Olivia', 'Torres', 'olivia.torres@example.com', 2, 'VP of Sales', '2014-04-26', NULL);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (16, 'Peter', 'Cook', 'peter.cook@example.com', 2, 'Sales Manager', '2020-09-09', 15);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (17, 'Quinn', 'Bell', 'quinn.bell@example.com', 2, 'Sales Manager', '2018-02-20', 15);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (18, 'Rachel', 'Kim', 'rachel.kim@example.com', 2, 'Account Executive', '2016-07-03', 16);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (19, 'Samuel', 'Martin', 'samuel.martin@example.com', 2, 'Account Executive', '2023-12-14', 16);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (20, 'Tara', 'Khan', 'tara.khan@example.com', 2, 'Account Executive', '2021-05-25', 16);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (21, 'Umar', 'Young', 'umar.young@example.com', 2, 'Account Executive', '2019-10-08', 17);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (22, 'Victoria', 'Adams', 'victoria.adams@example.com', 2, 'Account Executive', '2017-03-19', 17);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (23, 'William', 'Carter', 'william.carter@example.com', 2, 'Account Executive', '2024-08-02', 17);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (24, 'Xavier', 'Edwards', 'xavier.edwards@example.com', 2, 'Sales Development Representative', '2022-01-13', 16);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (25, 'Yasmin', 'Peterson', 'yasmin.peterson@example.com', 2, 'Sales Development Representative', '2020-06-24', 17);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (26, 'Zoe', 'Nguyen', 'zoe.nguyen@example.com', 2, 'Sales Development Representative', '2018-11-07', 17);

-- Marketing (9 employees)
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (27, 'Aaron', 'Brown', 'aaron.brown@example.com', 3, 'Marketing Director', '2014-04-18', NULL);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (28, 'Bianca', 'Anderson', 'bianca.anderson@example.com', 3, 'Product Marketing Manager', '2023-09-01', 27);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (29, 'Carlos', 'Clark', 'carlos.clark@example.com', 3, 'Content Strategist', '2021-02-12', 27);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (30, 'Diana', 'Wright', 'diana.wright@example.com', 3, 'Content Strategist', '2019-07-23', 27);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (31, 'Ethan', 'Ramirez', 'ethan.ramirez@example.com', 3, 'Marketing Specialist', '2017-12-06', 27);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (32, 'Fiona', 'Turner', 'fiona.turner@example.com', 3, 'Marketing Specialist', '2024-05-17', 27);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (33, 'George', 'Murphy', 'george.murphy@example.com', 3, 'Marketing Specialist', '2022-10-28', 27);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (34, 'Hannah', 'Bailey', 'hannah.bailey@example.com', 3, 'Graphic Designer', '2020-03-11', 27);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (35, 'Ivan', 'Mueller', 'ivan.mueller@example.com', 3, 'SEO Analyst', '2018-08-22', 27);

-- Finance (8 employees)
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (36, 'Julia', 'Williams', 'julia.williams@example.com', 4, 'Finance Director', '2014-01-05', NULL);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (37, 'Kevin', 'Jackson', 'kevin.jackson@example.com', 4, 'Senior Accountant', '2023-06-16', 36);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (38, 'Laura', 'Hall', 'laura.hall@example.com', 4, 'Senior Accountant', '2021-11-27', 36);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (39, 'Marcus', 'Baker', 'marcus.baker@example.com', 4, 'Accountant', '2019-04-10', 36);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (40, 'Nina', 'Roberts', 'nina.roberts@example.com', 4, 'Accountant', '2017-09-21', 36);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (41, 'Oscar', 'Collins', 'oscar.collins@example.com', 4, 'Financial Analyst', '2024-02-04', 36);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (42, 'Priya', 'Morgan', 'priya.morgan@example.com', 4, 'Financial Analyst', '2022-07-15', 36);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (43, 'Ravi', 'Smith', 'ravi.smith@example.com', 4, 'Payroll Specialist', '2020-12-26', 36);

-- HR (6 employees)
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (44, 'Sofia', 'Rossi', 'sofia.rossi@example.com', 5, 'HR Director', '2016-05-09', NULL);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (45, 'Thomas', 'Wilson', 'thomas.wilson@example.com', 5, 'HR Business Partner', '2016-10-20', 44);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (46, 'Uma', 'Harris', 'uma.harris@example.com', 5, 'Recruiter', '2023-03-03', 44);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (47, 'Vincent', 'King', 'vincent.king@example.com', 5, 'Recruiter', '2021-08-14', 44);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (48, 'Wendy', 'Hill', 'wendy.hill@example.com', 5, 'HR Generalist', '2019-01-25', 44);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (49, 'Yusuf', 'Evans', 'yusuf.evans@example.com', 5, 'Benefits Coordinator', '2017-06-08', 44);

-- Operations (11 employees)
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (50, 'Zara', 'Morris', 'zara.morris@example.com', 6, 'Operations Director', '2016-11-19', NULL);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (51, 'Adrian', 'Reed', 'adrian.reed@example.com', 6, 'Operations Manager', '2022-04-02', 50);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (52, 'Beatriz', 'Patel', 'beatriz.patel@example.com', 6, 'Logistics Coordinator', '2020-09-13', 51);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (53, 'Chen', 'Chen', 'chen.chen@example.com', 6, 'Logistics Coordinator', '2018-02-24', 51);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (54, 'Daniela', 'Moore', 'daniela.moore@example.com', 6, 'Logistics Coordinator', '2016-07-07', 51);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (55, 'Elijah', 'Walker', 'elijah.walker@example.com', 6, 'Facilities Manager', '2023-12-18', 50);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (56, 'Farah', 'Green', 'farah.green@example.com', 6, 'Office Manager', '2021-05-01', 50);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (57, 'Gabriel', 'Mitchell', 'gabriel.mitchell@example.com', 6, 'Operations Analyst', '2019-10-12', 51);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (58, 'Helena', 'Parker', 'helena.parker@example.com', 6, 'Operations Analyst', '2017-03-23', 51);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (59, 'Ibrahim', 'Rogers', 'ibrahim.rogers@example.com', 6, 'IT Support Specialist', '2024-08-06', 51);
INSERT INTO employees (id, first_name, last_name, email, department_id, title, hire_date, manager_id) VALUES (60, 'Jasmine', 'Johnson', 'jasmine.johnson@example.com', 6, 'IT Support Specialist', '2022-01-17', 51);

-- Current salaries (employee_id, amount, currency, effective_date)
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (1, 215137, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (2, 178274, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (3, 182411, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (4, 158548, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (5, 155685, 'USD', '2024-02-28');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (6, 152822, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (7, 150959, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (8, 124096, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (9, 121233, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (10, 118370, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (11, 115507, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (12, 112644, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (13, 98781, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (14, 136918, 'USD', '2024-11-15');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (15, 198055, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (16, 142192, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (17, 139329, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (18, 96466, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (19, 94603, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (20, 92740, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (21, 90877, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (22, 88014, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (23, 86151, 'USD', '2024-08-02');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (24, 62288, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (25, 60425, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (26, 58562, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (27, 165699, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (28, 128836, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (29, 88973, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (30, 85110, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (31, 74247, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (32, 72384, 'USD', '2024-05-17');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (33, 70521, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (34, 78658, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (35, 76795, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (36, 172932, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (37, 104069, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (38, 101206, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (39, 82343, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (40, 79480, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (41, 93617, 'USD', '2024-02-04');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (42, 91754, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (43, 68891, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (44, 148028, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (45, 102165, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (46, 78302, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (47, 75439, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (48, 69576, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (49, 64713, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (50, 158850, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (51, 118987, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (52, 66124, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (53, 64261, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (54, 63398, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (55, 84535, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (56, 71672, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (57, 82809, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (58, 80946, 'USD', '2024-01-01');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (59, 67083, 'USD', '2024-08-06');
INSERT INTO salaries (employee_id, amount, currency, effective_date) VALUES (60, 65220, 'USD', '2024-01-01');
