// ga_register_functions has every SQLite connection opened after it
// register add_student_counts and union_students (functions.c), for
// counts of the given number of metrics; 0 if it could.
int ga_register_functions(int metrics);
