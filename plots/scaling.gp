# scaling.gp — the gap to the baseline against tokens per parameter: a panel
# per recipe, a line per model size (mean over seeds with its 95% interval
# as error bars), the fitted law's gap as a dashed line of the same colour.
# Data and variables: paper/scaling_fit.py (datafile, nrec, nsize, recipes,
# sizes, xlo, xhi; index 2*((i-1)*nsize + j-1) the points, +1 the fit).
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
width = 3.5
height = 1.1 + 1.6 * nrec
load plotsdir."/style.gp"
sizecolors = "#0072B2 #E69F00 #009E73 #CC79A7 #56B4E9 #D55E00"
set multiplot layout nrec, 1 margins 0.16, 0.97, 0.5/height, 1 - 0.08/height spacing 0, 0.35/height
set logscale x
set xrange [xlo:xhi]
set xlabel ""
set format x ""
do for [i=1:nrec] {
    if (i == nrec) { set xlabel "training tokens per non-embedding parameter"; set format x "%g" }
    set ylabel sprintf("gap %% (%s)", word(recipes, i)) noenhanced
    set key top left font ",7" maxrows 2
    plot for [j=1:nsize] datafile index 2*((i-1)*nsize + j-1) using 1:2:3:4 with yerrorlines pt 7 ps 0.4 lw 1.1 \
             lc rgb word(sizecolors, j) title (i == 1 ? "N = ".word(sizes, j) : ""), \
         for [j=1:nsize] datafile index 2*((i-1)*nsize + j-1) + 1 using 1:2 with lines dt 2 lw 0.9 \
             lc rgb word(sizecolors, j) notitle, \
         0 with lines lw 0.5 lc rgb "#888888" notitle
}
unset multiplot
